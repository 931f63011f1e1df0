// `feedrate report`: a self-contained HTML page (inline SVG, no network requests) and a markdown summary from
// result directories: Feedrate runs, Feedrate sweeps, and DLIO's own result dirs (summary.json under DLIO's
// names), side by side when there are several.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/status.h"

namespace feedrate {

struct EpochRow {
  double epoch = 0, au_pct = 0, au_min_pct = 0, au_max_pct = 0, samples_per_s = 0, read_mib_per_s = 0;
};

struct StepRow {
  int accelerator = 0, epoch = 0, step = 0;
  double stall_seconds = 0;
};

struct ReportInput {
  std::string dir;
  std::string kind;  // "feedrate run", "dlio run" or "feedrate sweep"
  nlohmann::json summary;  // runs: summary.json
  nlohmann::json sweep;    // sweeps: sweep.json
  std::vector<EpochRow> epochs;  // Feedrate runs: per_epoch.csv
  std::vector<StepRow> steps;    // Feedrate runs: steps.csv (per step of every accelerator)
};

// Reads a result directory: sweep.json (a sweep), else summary.json (a run; DLIO's when it has no "feedrate"
// object). Errors name the directory and what is missing or unreadable.
Result<ReportInput> LoadResultDir(const std::string& dir);

std::string RenderReportMarkdown(const std::vector<ReportInput>& inputs);
std::string RenderReportHtml(const std::vector<ReportInput>& inputs);

}  // namespace feedrate
