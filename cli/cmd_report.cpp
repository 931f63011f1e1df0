// `feedrate report DIR... [-o report.html]`: HTML (inline SVG) and markdown from result directories.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "emulator/report.h"
#include "emulator/results.h"
#include "emulator/run.h"

namespace feedrate::cli {

Runner AddReport(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "HTML and markdown report from run, sweep or DLIO result directories");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  sub->add_option("dirs", *dirs, "result directories (feedrate run or sweep, or DLIO's)")->required();
  sub->add_option("-o,--output", *out, "HTML file to write (default: report.html in the first directory); the markdown "
                                      "goes beside it (.md)");
  return [=] {
    std::vector<ReportInput> inputs;
    for (const auto& d : *dirs) {
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
    for (const auto& [path, text] : {std::pair{html, RenderReportHtml(inputs)}, std::pair{md, RenderReportMarkdown(inputs)}}) {
      Status st = WriteFileAtomic(path, text);
      if (!st.ok()) {
        std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
        return kExitError;
      }
    }
    std::printf("report: %s\nmarkdown: %s\n", html.c_str(), md.c_str());
    return kExitPass;
  };
}

}  // namespace feedrate::cli
