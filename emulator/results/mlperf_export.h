// MLPerf-style export: results.json and results.csv with one row per run, in the shape mlpstorage's
// `reports reportgen` writes (BenchmarkRun.as_dict: run_id, benchmark_type, model, command, num_processes,
// parameters, system_info, metrics, accelerator; the CSV flattens nested keys with "." and sorts the columns).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/results/result_dirs.h"

namespace feedrate {

// One row for a Feedrate or DLIO run (not a sweep: pass the sweep's runs, see RunDirsOf). Feedrate rows add
// what mlpstorage's Result carries beside the run: `category` (closed/open/invalid from the rule checks) and
// `issues`, plus `tool`.
nlohmann::json MlperfRunRow(const ReportInput& run);

// The rows as mlpstorage's CSV: nested objects flattened ("metrics.train_au_mean_percentage"), the union of
// keys sorted as the header, lists and scalars written the way Python's csv module writes them.
std::string MlperfResultsCsv(const nlohmann::json& rows);
// repr(d) as Python 3 prints a float (shortest round-trip digits, Python's notation rules): the CSV's numbers.
std::string PythonFloatRepr(double d);

}  // namespace feedrate
