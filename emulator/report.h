// `feedrate report`: a self-contained HTML page (inline SVG, no network requests) and a markdown summary from
// result directories: Feedrate runs, Feedrate sweeps, and DLIO's own result dirs (summary.json under DLIO's
// names), side by side when there are several.
#pragma once

#include <string>
#include <vector>

#include "emulator/result_dirs.h"

namespace feedrate {

std::string RenderReportMarkdown(const std::vector<ReportInput>& inputs);
std::string RenderReportHtml(const std::vector<ReportInput>& inputs);

}  // namespace feedrate
