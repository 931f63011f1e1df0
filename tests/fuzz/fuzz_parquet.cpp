// Fuzzes the Parquet readers: the whole-file path (magic, footer length, Thrift FileMetaData, the cross-checks,
// training spans and row extents) and the page-header parser. A footer that passes the checks must give spans and
// extents inside the file.
#include "fuzz_util.h"
#include "loader/format/parquet.h"
#include "loader/format/sample_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedrate;
  (void)ParsePageHeader(data, size);
  fuzz::MemFile f(data, size);
  FdByteSource src(f.fd(), f.size(), "fuzz.parquet");
  auto m = ReadParquetFooter(src);
  if (m.ok()) {
    (void)m->TopFields();
    auto spans = ParquetReadSpans(*m, {}, "fuzz.parquet");
    if (spans.ok()) {
      for (const auto& s : *spans) {
        if (s.offset + s.length > size) __builtin_trap();
      }
    }
  }
  return 0;
}
