// `feedrate report DIR... [-o report.html]`: HTML (inline SVG) and markdown from result directories.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "emulator/report/report.h"
#include "emulator/results/mlperf_export.h"
#include "emulator/results/result_dirs.h"
#include "emulator/results/results.h"
#include "emulator/run/run.h"
#include "loader/io/safe_file.h"

namespace feedrate::cli {

Runner AddReport(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "HTML and markdown report from run, sweep or DLIO result directories");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  sub->add_option("dirs", *dirs, "result directories (feedrate run or sweep, or DLIO's), or folders holding them "
                                 "(an mlpstorage results tree: every run under it)")->required();
  sub->add_option("-o,--output", *out, "HTML file to write (default: report.html in the first directory); the markdown "
                                      "(.md) and the MLPerf-style results.json / results.csv go beside it");
  return [=] {
    std::vector<ReportInput> inputs;
    std::vector<std::string> found;
    for (const auto& d : *dirs) {
      auto under = FindResultDirs(d);
      if (under.empty()) under.push_back(d);  // nothing under it: LoadResultDir says what is missing
      found.insert(found.end(), under.begin(), under.end());
    }
    for (const auto& d : found) {
      auto in = LoadResultDir(d);
      if (!in.ok()) {
        std::fprintf(stderr, "feedrate: error: %s\n", in.status().ToString().c_str());
        return kExitError;
      }
      inputs.push_back(std::move(*in));
    }
    std::string html = out->empty() ? dirs->front() + "/report.html" : *out;
    std::string md = std::filesystem::path(html).replace_extension(".md").string();
    if (md == html) md += ".md";
    std::error_code ec;
    const auto parent = std::filesystem::path(html).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      std::fprintf(stderr, "feedrate: error: cannot create %s: %s\n", parent.c_str(), ec.message().c_str());
      return kExitError;
    }
    // One MLPerf-style row per run: the runs given, and every run a sweep recorded.
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& in : inputs) {
      for (const auto& run_dir : RunDirsOf(in)) {
        if (run_dir == in.dir) {
          rows.push_back(MlperfRunRow(in));
          continue;
        }
        auto run = LoadResultDir(run_dir);
        if (run.ok()) {
          rows.push_back(MlperfRunRow(*run));
        } else {
          std::fprintf(stderr, "feedrate: warning: sweep %s: run left out of results.json: %s\n", in.dir.c_str(),
                       run.status().ToString().c_str());
        }
      }
    }
    const auto dir = parent.empty() ? std::filesystem::path(".") : parent;
    const std::string rjson = (dir / "results.json").string(), rcsv = (dir / "results.csv").string();
    for (const auto& [path, text] : {std::pair{html, RenderReportHtml(inputs)}, std::pair{md, RenderReportMarkdown(inputs)},
                                     std::pair{rjson, rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"}, std::pair{rcsv, MlperfResultsCsv(rows)}}) {
      Status st = WriteFileSafely(path, text);
      if (!st.ok()) {
        std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
        return kExitError;
      }
    }
    std::printf("report: %s\nmarkdown: %s\nresults (MLPerf-style, %zu run(s)): %s, %s\n", html.c_str(), md.c_str(), rows.size(),
                rjson.c_str(), rcsv.c_str());
    return kExitPass;
  };
}

}  // namespace feedrate::cli
