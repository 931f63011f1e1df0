// Report rendering: one section per input (the answer first), a comparison table when there are several.
#include "emulator/report/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "emulator/report/svg_chart.h"
#include "loader/util/output_text.h"

namespace feedrate {

namespace {

using nlohmann::json;

std::string Fmt(double v, int decimals = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

double Num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }
std::string Str(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

// The figures a comparison row and a run section share.
struct RunFigures {
  std::string workload, status, validity, engine;
  double accelerators = 0, au = 0, au_bar = 0, throughput = 0, mib = 0;
  bool odirect = false;
};

RunFigures Facts(const ReportInput& in) {
  RunFigures f;
  const json& s = in.summary;
  const json m = s.value("metric", json::object());
  const json fr = s.value("feedrate", json::object());
  f.workload = fr.contains("workload") ? Str(fr, "workload") : Str(s, "model");
  f.accelerators = Num(s, "num_accelerators");
  f.au = Num(m, "train_au_mean_percentage");
  f.throughput = Num(m, "train_throughput_mean_samples_per_second");
  f.mib = fr.contains("read_mib_per_s") ? Num(fr, "read_mib_per_s") : Num(m, "train_io_mean_MB_per_second");
  f.status = fr.contains("status") ? Str(fr, "status") : Str(m, "train_au_meet_expectation");
  f.validity = fr.contains("validity") ? Str(fr["validity"], "category") : "";
  f.engine = Str(fr, "engine");
  f.odirect = fr.value("odirect", false);
  const json cfg = fr.value("config", json::object());
  f.au_bar = 100 * cfg.value("metric", json::object()).value("au", 0.0);
  return f;
}

// The side-by-side table's cells, one row per input (markdown and HTML format the same rows).
const std::vector<std::string> kComparisonHeader = {"result", "kind", "workload", "accelerators", "AU %", "MiB/s", "status", "validity"};

std::vector<std::vector<std::string>> ComparisonRows(const std::vector<ReportInput>& inputs) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& in : inputs) {
    if (in.kind == "feedrate sweep") {
      rows.push_back({in.dir, "sweep", Str(in.sweep, "workload"), Str(in.sweep, "accelerators_supported") + " supported", "", "", "",
                      in.sweep.contains("validity") ? Str(in.sweep["validity"], "category") : ""});
    } else if (in.kind == "feedrate checkpoint") {  // MiB/s: the writes' mean
      const json fr = in.summary.value("feedrate", json::object());
      rows.push_back({in.dir, "checkpoint", Str(fr, "workload"), Str(in.summary, "num_accelerators") + " ranks", "",
                      Fmt(1024 * Num(fr.value("save", json::object()), "GiB_per_second_mean"), 1), Str(fr, "status"), ""});
    } else {
      const RunFigures f = Facts(in);
      rows.push_back({in.dir, in.kind, f.workload, Fmt(f.accelerators, 0), Fmt(f.au), Fmt(f.mib, 1), f.status, f.validity});
    }
  }
  return rows;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};

// A histogram of every step's stall (20 bins up to the largest), and epoch 1's steps: mean and max stall over
// accelerators.
std::string StallCharts(const std::vector<StepRow>& steps) {
  double top = 0;
  int last_step = 0;
  for (const auto& r : steps) {
    top = std::max(top, r.stall_seconds);
    if (r.epoch == 1) last_step = std::max(last_step, r.step);
  }
  const int kBins = 20;
  const double width = top > 0 ? top / kBins : 1e-3;
  std::vector<double> count(kBins, 0);
  for (const auto& r : steps) count[std::min(kBins - 1, static_cast<int>(r.stall_seconds / width))] += 1;
  Chart hist{"Stall per step, every accelerator and epoch (" + std::to_string(steps.size()) + " steps)", "stall (s)", "steps", {},
             false, 0, "", 0, true, width};
  ChartSeries bins{"steps", {}, kColors[0]};
  for (int i = 0; i < kBins; ++i) bins.points.push_back({i * width, count[static_cast<size_t>(i)]});
  hist.series = {bins};
  std::vector<double> sum(static_cast<size_t>(last_step) + 1, 0), max(sum.size(), 0), n(sum.size(), 0);
  for (const auto& r : steps) {
    if (r.epoch != 1 || r.step < 1) continue;
    const auto k = static_cast<size_t>(r.step);
    sum[k] += r.stall_seconds;
    max[k] = std::max(max[k], r.stall_seconds);
    n[k] += 1;
  }
  ChartSeries mean{"mean over accelerators", {}, kColors[0]}, worst{"max over accelerators", {}, kColors[1]};
  for (size_t k = 1; k < sum.size(); ++k) {
    if (n[k] == 0) continue;
    mean.points.push_back({static_cast<double>(k), sum[k] / n[k]});
    worst.points.push_back({static_cast<double>(k), max[k]});
  }
  Chart timeline{"Epoch 1, step by step: time waiting for the batch", "step", "stall (s)", {mean, worst}, false, 0, ""};
  return RenderSvgChart(hist) + RenderSvgChart(timeline);
}

std::string RunHtml(const ReportInput& in) {
  const RunFigures f = Facts(in);
  const json& s = in.summary;
  const json fr = s.value("feedrate", json::object());
  std::string o = "<section class=\"run\"><h2>" + (in.kind + ": " + f.workload) + "</h2>";
  o += "<p class=\"answer\">" + Fmt(f.accelerators, 0) + " accelerator(s): AU " + Fmt(f.au) + "%" +
       (f.au_bar > 0 ? " (bar " + Fmt(f.au_bar, 0) + "%)" : "") + ", " + (f.status) +
       (f.validity.empty() ? "" : ", validity " + (f.validity)) + "</p>";
  o += "<table><tr><th>directory</th><td>" + (in.dir) + "</td></tr>";
  o += "<tr><th>throughput</th><td>" + Fmt(f.throughput) + " samples/s</td></tr>";
  o += "<tr><th>read</th><td>" + Fmt(f.mib, 1) + " MiB/s</td></tr>";
  if (!f.engine.empty()) o += "<tr><th>engine</th><td>" + (f.engine) + (f.odirect ? ", O_DIRECT" : ", buffered") + "</td></tr>";
  std::string mem;
  for (const auto& g : s.value("host_memory_GB", json::array())) {
    if (g.is_number()) mem += (mem.empty() ? "" : ", ") + Fmt(g.get<double>(), 1);
  }
  o += "<tr><th>hosts</th><td>" + Str(s, "num_hosts") + " (" + (Str(s, "hostname")) + "; CPUs " +
       (Str(s, "host_cpu_count")) + "; memory " + mem + " GB)</td></tr>";
  if (fr.contains("dataset_to_memory_ratio")) {
    const double ratio = Num(fr, "dataset_to_memory_ratio");
    o += "<tr><th>dataset / client memory</th><td>" + Fmt(ratio) + "x" +
         (ratio < 5 ? " (below the 5x rule: the page cache can serve reads)" : "") + "</td></tr>";
  }
  if (fr.contains("host_facts")) {
    o += "<tr><th>kernel, data file system</th><td>" + (Str(fr["host_facts"], "kernel")) + ", " +
         (Str(fr["host_facts"], "data_dir_fs")) + "</td></tr>";
  }
  if (fr.contains("stall_seconds")) {
    const json& st = fr["stall_seconds"];
    o += "<tr><th>stall per step (s)</th><td>p50 " + Fmt(Num(st, "p50"), 4) + ", p90 " + Fmt(Num(st, "p90"), 4) + ", p99 " +
         Fmt(Num(st, "p99"), 4) + ", max " + Fmt(Num(st, "max"), 4) + "</td></tr>";
  }
  o += "</table>";
  // AU per epoch (mean, and the spread over accelerators when Feedrate recorded it).
  Chart au{"AU per epoch", "epoch", "AU %", {}, f.au_bar > 0, f.au_bar, "AU bar", 100};
  const bool dlio = in.kind == "dlio run";
  if (dlio) o.insert(o.rfind("</table>"), "<tr><th>per-rank outputs</th><td>" + std::to_string(in.dlio_rank_files) + " ({rank}_output.json)</td></tr>");
  Chart mib{dlio ? "MiB/s per epoch (DLIO: samples/s x record size)" : "Read MiB/s per epoch", "epoch", "MiB/s", {}, false, 0, ""};
  if (!in.epochs.empty()) {
    ChartSeries mean{"mean", {}, kColors[0]}, lo{"min", {}, kColors[1]}, hi{"max", {}, kColors[2]}, rd{"read", {}, kColors[0]};
    for (const auto& e : in.epochs) {
      mean.points.push_back({e.epoch, e.au_pct});
      lo.points.push_back({e.epoch, e.au_min_pct});
      hi.points.push_back({e.epoch, e.au_max_pct});
      rd.points.push_back({e.epoch, e.read_mib_per_s});
    }
    au.series = {mean, lo, hi};
    if (!dlio || rd.points.front().second > 0) mib.series = {rd};
  } else if (s.value("metric", json::object()).contains("train_au_percentage")) {  // DLIO: per epoch AU only
    ChartSeries mean{"mean", {}, kColors[0]};
    double e = 1;
    for (const auto& v : s["metric"]["train_au_percentage"]) mean.points.push_back({e++, v.get<double>()});
    au.series = {mean};
  }
  if (!au.series.empty()) o += RenderSvgChart(au);
  if (!mib.series.empty()) o += RenderSvgChart(mib);
  if (!in.steps.empty()) o += StallCharts(in.steps);
  o += HostsHtml(in);
  o += StorageHtml(in);
  if (fr.contains("validity") && !fr["validity"]["reasons"].empty()) {
    o += "<h3>Validity: " + (f.validity) + "</h3><ul>";
    for (const auto& r : fr["validity"]["reasons"]) o += "<li>" + (r.get<std::string>()) + "</li>";
    o += "</ul>";
  }
  if (fr.contains("warnings") && !fr["warnings"].empty()) {
    o += "<h3>Warnings</h3><ul>";
    for (const auto& w : fr["warnings"]) o += "<li>" + (w.get<std::string>()) + "</li>";
    o += "</ul>";
  }
  if (fr.contains("config")) o += "<details><summary>Resolved configuration</summary><pre>" + (fr["config"].dump(2)) + "</pre></details>";
  return o + "</section>";
}

std::string SweepHtml(const ReportInput& in) {
  const json& w = in.sweep;
  std::string o = "<section class=\"sweep\"><h2>" + ("feedrate sweep: " + Str(w, "workload")) + "</h2>";
  o += "<p class=\"answer\">Accelerators supported: <b>" + Str(w, "accelerators_supported") +
       (w.value("lower_bound_only", false) ? " or more" : "") + "</b> at AU &ge; " + Fmt(Num(w, "au_bar_pct"), 0) + "%";
  if (w.contains("validity")) o += ", validity " + (Str(w["validity"], "category"));
  o += "</p>";
  const json b = w.value("bottleneck", json::object());
  o += "<p>Limit: <b>" + (Str(b, "limit")) + "</b>: " + (Str(b, "explanation")) + "</p>";
  ChartSeries au{"AU %", {}, kColors[0]}, mib{"read MiB/s", {}, kColors[1]};
  o += "<table><tr><th>accelerators</th><th>run</th><th>AU %</th><th>MiB/s</th><th>client CPU</th><th>stall p99 (s)</th><th>verdict</th></tr>";
  for (const auto& p : w.value("points", json::array())) {
    for (const auto& r : p.value("runs", json::array())) {
      const double n = Num(p, "accelerators");
      au.points.push_back({n, Num(r, "au_pct")});
      mib.points.push_back({n, Num(r, "read_mib_per_s")});
      const int code = r.value("exit_code", 2);
      o += "<tr><td>" + Fmt(n, 0) + "</td><td>" + Str(r, "repeat") + "</td><td>" + Fmt(Num(r, "au_pct")) + "</td><td>" +
           Fmt(Num(r, "read_mib_per_s"), 1) + "</td><td>" + Fmt(100 * Num(r, "client_cpu_utilisation"), 0) + "%</td><td>" +
           Fmt(Num(r, "stall_p99_seconds"), 4) + "</td><td>" + (code == 0 ? "pass" : code == 3 ? "miss" : "error") + "</td></tr>";
    }
  }
  o += "</table>";
  auto by_x = [](ChartSeries s) {
    std::sort(s.points.begin(), s.points.end());
    return s;
  };
  o += RenderSvgChart({"AU against accelerator count", "accelerators", "AU %", {by_x(au)}, true, Num(w, "au_bar_pct"), "AU bar", 100});
  o += RenderSvgChart({"Delivered MiB/s against accelerator count", "accelerators", "MiB/s", {by_x(mib)},
                       b.contains("storage_ceiling_mib_per_s"), Num(b, "storage_ceiling_mib_per_s"), "storage ceiling (iobench)"});
  if (w.contains("validity")) {
    o += "<h3>Validity: " + (Str(w["validity"], "category")) + "</h3><ul>";
    for (const auto& r : w["validity"].value("reasons", json::array())) o += "<li>" + (r.get<std::string>()) + "</li>";
    o += "</ul>";
  }
  return o + "</section>";
}

// Every string an input holds, as one output format writes it (output_text.h): the renderers below take their
// values from these copies only, so none reaches a page or a table unescaped.
std::vector<ReportInput> ForFormat(const std::vector<ReportInput>& inputs, std::string (*text)(std::string_view)) {
  std::vector<ReportInput> out = inputs;
  for (auto& in : out) {
    in.dir = text(in.dir);
    for (json* j : {&in.summary, &in.sweep, &in.dlio_workload, &in.dlio_overrides}) *j = MapStrings(*j, text);
  }
  return out;
}

}  // namespace

std::string RenderReportMarkdown(const std::vector<ReportInput>& raw) {
  const std::vector<ReportInput> inputs = ForFormat(raw, MarkdownText);
  std::ostringstream o;
  o << "# Feedrate report\n\n";
  for (const auto& in : inputs) {
    if (in.kind == "feedrate sweep") {
      const json& w = in.sweep;
      o << "## " << in.kind << ": " << Str(w, "workload") << " (" << in.dir << ")\n\n";
      o << "- accelerators supported: **" << Str(w, "accelerators_supported") << (w.value("lower_bound_only", false) ? " or more" : "")
        << "** at AU >= " << Fmt(Num(w, "au_bar_pct"), 0) << "%\n";
      if (w.contains("validity")) o << "- validity: " << Str(w["validity"], "category") << "\n";
      const json b = w.value("bottleneck", json::object());
      o << "- limit: " << Str(b, "limit") << ": " << Str(b, "explanation") << "\n\n";
      o << "| accelerators | run | AU % | MiB/s | client CPU | verdict |\n|---|---|---|---|---|---|\n";
      for (const auto& p : w.value("points", json::array())) {
        for (const auto& r : p.value("runs", json::array())) {
          const int code = r.value("exit_code", 2);
          o << "| " << Str(p, "accelerators") << " | " << Str(r, "repeat") << " | " << Fmt(Num(r, "au_pct")) << " | "
            << Fmt(Num(r, "read_mib_per_s"), 1) << " | " << Fmt(100 * Num(r, "client_cpu_utilisation"), 0) << "% | "
            << (code == 0 ? "pass" : code == 3 ? "miss" : "error") << " |\n";
        }
      }
      o << "\n";
    } else if (in.kind == "feedrate checkpoint") {
      o << CheckpointMarkdown(in);
    } else {
      const RunFigures f = Facts(in);
      o << "## " << in.kind << ": " << f.workload << " (" << in.dir << ")\n\n";
      o << "- " << Fmt(f.accelerators, 0) << " accelerator(s): AU " << Fmt(f.au) << "%, " << f.status
        << (f.validity.empty() ? "" : ", validity " + f.validity) << "\n";
      o << "- " << Fmt(f.throughput) << " samples/s, " << Fmt(f.mib, 1) << " MiB/s read\n\n";
      o << HostsMarkdown(in);
      o << StorageMarkdown(in);
    }
  }
  if (inputs.size() > 1) {
    o << "## Side by side\n\n|";
    for (const auto& h : kComparisonHeader) o << " " << h << " |";
    o << "\n|";
    for (size_t i = 0; i < kComparisonHeader.size(); ++i) o << "---|";
    o << "\n";
    for (const auto& row : ComparisonRows(inputs)) {
      o << "| " << row[0] << " |";
      for (size_t i = 1; i < row.size(); ++i) o << " " << row[i] << " |";
      o << "\n";
    }
  }
  return o.str();
}

std::string RenderReportHtml(const std::vector<ReportInput>& raw) {
  const std::vector<ReportInput> inputs = ForFormat(raw, HtmlText);
  std::string o =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Feedrate report</title><style>"
      "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}table{border-collapse:collapse;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}.answer{font-size:1.3em}"
      ".chart{display:block;margin:1em 0;background:#fff;border:1px solid #ddd}.ax{stroke:#333}.grid{stroke:#eee}"
      ".ref{stroke:#d62728;stroke-dasharray:6 4}.tk{font-size:11px;fill:#444}.al{font-size:12px;fill:#222}"
      ".ct{font-size:14px;font-weight:bold}pre{background:#f7f7f7;padding:1em;overflow:auto}"
      "</style></head><body><h1>Feedrate report</h1>";
  if (inputs.size() > 1) {
    o += "<h2>Side by side</h2><table id=\"comparison\"><tr>";
    for (const auto& h : kComparisonHeader) o += "<th>" + (h) + "</th>";
    o += "</tr>";
    for (const auto& row : ComparisonRows(inputs)) {
      o += "<tr>";
      for (const auto& cell : row) o += "<td>" + (cell) + "</td>";
      o += "</tr>";
    }
    o += "</table>";
  }
  for (const auto& in : inputs) {
    o += in.kind == "feedrate sweep" ? SweepHtml(in) : in.kind == "feedrate checkpoint" ? CheckpointHtml(in) : RunHtml(in);
  }
  return o + "</body></html>\n";
}

}  // namespace feedrate
