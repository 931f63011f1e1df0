// `feedrate report`: a self-contained HTML page (inline SVG, no network requests) and a markdown summary from
// result directories: Feedrate runs, Feedrate sweeps, and DLIO's own result dirs (summary.json under DLIO's
// names), side by side when there are several.
#pragma once

#include <string>
#include <vector>

#include "emulator/results/result_dirs.h"

namespace feedrate {

std::string RenderReportMarkdown(const std::vector<ReportInput>& inputs);
std::string RenderReportHtml(const std::vector<ReportInput>& inputs);
// A Feedrate run's cache, residency, device-byte, latency and time-series figures ("" when it has none).
std::string StorageHtml(const ReportInput& in);
std::string StorageMarkdown(const ReportInput& in);
// A multi-host run's per-host table and step-barrier cost ("" for one host).
std::string HostsHtml(const ReportInput& in);
std::string HostsMarkdown(const ReportInput& in);
// A `feedrate checkpoint` result: size, write and read GiB/s per checkpoint (slowest rank) and rank 0's.
std::string CheckpointHtml(const ReportInput& in);
std::string CheckpointMarkdown(const ReportInput& in);

}  // namespace feedrate
