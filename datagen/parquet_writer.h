// Writes DLIO-layout Parquet files, as MLPerf Storage v3.0's generator (mlcommons/DLIO_local_changes
// parquet_generator.py, pyarrow) lays them out: one nullable column per dataset.parquet.columns entry (a scalar,
// or a fixed-size list when size > 1), row groups of dataset.parquet.row_group_size rows, v1 data pages of ~1 MiB
// with dictionary encoding falling back to PLAIN as pyarrow's defaults do, the page codec of
// dataset.compression. docs/formats.md says what differs from pyarrow's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/config/workload_config.h"
#include "loader/status.h"

namespace feedrate {

struct ParquetFileSpec {
  std::vector<ParquetColumn> columns;  // empty: DLIO's legacy layout, one `data` list of legacy_elems uint8 values
  uint64_t legacy_elems = 1;
  uint64_t rows = 1;
  uint64_t row_group_size = 1024;
  int32_t codec = 0;  // PqCodec (parquet_codec.h ParquetCodecFor)
};

// The columns a file has for `cfg`: cfg.parquet_columns, or the legacy `data` column of d1*d2 uint8 values.
ParquetFileSpec DlioParquetSpec(const WorkloadConfig& cfg, uint64_t d1, uint64_t d2);

// About the bytes the file holds before compression, within a few percent above (for the free-space check).
uint64_t ParquetDataBytes(const ParquetFileSpec& spec);

// Writes `path` through a temporary name (renamed when complete); values are uniform in [0, 1) for floats and
// cover the whole range for integers (numpy's random tensors, as DLIO draws them), from `seed`.
Status WriteDlioParquet(const std::string& path, const ParquetFileSpec& spec, uint64_t seed);

// Whether `path` is a complete Parquet file with `spec`'s rows and columns (datagen --skip-existing).
bool ParquetFileMatches(const std::string& path, const ParquetFileSpec& spec);

}  // namespace feedrate
