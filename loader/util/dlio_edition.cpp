// The editions' DLIOs (dlio_edition.h). v2.0 is mlpstorage 2.0's pin of upstream DLIO (its mlperf_storage_v2.0
// branch); its reader calls are taken as those measured on upstream e1919d7 (docs/dlio-compatibility.md).
#include "loader/util/dlio_edition.h"

#include <array>

namespace feedrate {
namespace {

constexpr std::array<DlioEditionTraits, 3> kEditions = {{
    {DlioEdition::kV3_0, "MLPerf Storage v3.0", "mlcommons/DLIO_local_changes f16fe43 (mlpstorage 3.0.26)",
     /*whole_file_reads=*/true, /*presharded_round_robin=*/true, /*restart_workers=*/true,
     /*throughput_counts_window=*/true, /*flush_rank0_each_epoch=*/true, /*raw_image_datagen=*/true,
     /*auto_read_threads=*/true},
    {DlioEdition::kV2_0, "MLPerf Storage v2.0", "argonne-lcf/dlio_benchmark mlperf_storage_v2.0 (mlpstorage 2.0)",
     false, false, false, false, false, false, false},
    {DlioEdition::kUpstream, "upstream DLIO", "argonne-lcf/dlio_benchmark e1919d7", false, false, false, false, false,
     false, false},
}};

}  // namespace

const DlioEditionTraits& Traits(DlioEdition e) { return kEditions.at(static_cast<size_t>(e)); }

}  // namespace feedrate
