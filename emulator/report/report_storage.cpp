// The report's "what served the bytes" part of a Feedrate run: cache mode and its check, per-epoch MiB/s with the
// page-cache resident share and device bytes, read latency, content checks, and the time series.
#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

#include "emulator/report/report.h"
#include "emulator/report/svg_chart.h"

namespace feedrate {
namespace {

using nlohmann::json;

std::string F(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string Pct(const json& v) { return v.is_number() ? F(100 * v.get<double>(), 1) + "%" : "n/a"; }
std::string Gib(const json& v) { return v.is_number() ? F(v.get<double>() / (1024.0 * 1024 * 1024), 2) : "n/a"; }

// "S3 s3://b/p: 224 GETs, 0 retries (no client page cache)" for runs on S3; "" otherwise.
std::string S3Line(const json& fr) {
  if (!fr.contains("s3")) return "";
  const json& s = fr["s3"];
  return "S3 " + s.value("location", std::string()) + ": " + F(s.value("get_requests", 0.0), 0) + " ranged GETs, " +
         F(s.value("retries", 0.0), 0) + " retries (no client page cache: every epoch fetched over HTTP)";
}

}  // namespace

std::string StorageHtml(const ReportInput& in) {
  const json fr = in.summary.value("feedrate", json::object());
  if (!fr.contains("epochs") && in.timeseries.empty()) return "";
  std::string o = "<h3>What served the bytes</h3><table>";
  o += "<tr><th>cache mode</th><td>" + (fr.value("cache_mode", std::string("keep")));
  if (fr.contains("cache") && fr["cache"].contains("check")) {
    const json& c = fr["cache"]["check"];
    o += " (first drop: resident " + Pct(c["resident_before"]) + " before, " + Pct(c["resident_after"]) + " after" +
         (c.value("effective", false) ? "" : ": <b>the drop did not empty the cache</b>") + ")";
  }
  o += "</td></tr>";
  if (!S3Line(fr).empty()) o += "<tr><th>object store</th><td>" + (S3Line(fr)) + "</td></tr>";
  if (fr.contains("loader_vs_device")) o += "<tr><th>loader vs device</th><td>" + (fr["loader_vs_device"].get<std::string>()) + "</td></tr>";
  for (const auto& d : fr.value("devices", json::array())) {
    o += "<tr><th>device (" + (d.value("host", std::string())) + ")</th><td>" + (d.value("kind", std::string())) +
         ": " + (d.value("device", std::string())) + (d.value("model", std::string()).empty() ? "" : ", " + (d["model"].get<std::string>())) +
         "</td></tr>";
  }
  if (fr.contains("read_latency_us")) {
    const json& l = fr["read_latency_us"];
    o += "<tr><th>read latency (us)</th><td>p50 " + F(l.value("p50", 0.0), 0) + ", p99 " + F(l.value("p99", 0.0), 0) +
         ", max " + F(l.value("max", 0.0), 0) + "</td></tr>";
  }
  if (fr.contains("verify")) {
    const json& v = fr["verify"];
    o += "<tr><th>content check</th><td>" + Gib(v["bytes_checked"]) + " GiB checked (" + F(100 * v.value("fraction", 0.0), 1) +
         "% of each sample), " + F(v.value("seconds_per_gib", 0.0), 3) + " s/GiB</td></tr>";
  }
  o += "</table>";
  if (fr.contains("epochs")) {
    o += "<table><tr><th>epoch</th><th>read MiB/s</th><th>resident in page cache</th><th>loader GiB</th><th>device GiB</th></tr>";
    for (const auto& e : fr["epochs"]) {
      o += "<tr><td>" + std::to_string(e.value("epoch", 0)) + "</td><td>" + F(e.value("read_mib_per_s", 0.0), 1) + "</td><td>" +
           Pct(e["resident_fraction"]) + "</td><td>" + Gib(e["bytes_read"]) + "</td><td>" + Gib(e["device_bytes_read"]) + "</td></tr>";
    }
    o += "</table>";
  }
  if (!in.timeseries.empty()) {
    ChartSeries mib{"read MiB/s (all ranks)", {}, "#1f77b4"}, stall{"accelerators stalled %", {}, "#d62728"};
    for (const auto& p : in.timeseries) {
      mib.points.push_back({p.time_s, p.read_mib_per_s});
      stall.points.push_back({p.time_s, p.stall_pct});
    }
    Chart c1{"Delivered MiB/s over time (timeseries.csv)", "seconds", "MiB/s", {mib}, false, 0, ""};
    Chart c2{"Accelerator stall over time", "seconds", "stalled %", {stall}, false, 0, "", 100};
    o += RenderSvgChart(c1) + RenderSvgChart(c2);
  }
  return o;
}

std::string StorageMarkdown(const ReportInput& in) {
  const json fr = in.summary.value("feedrate", json::object());
  if (!fr.contains("epochs")) return "";
  std::ostringstream o;
  o << "- cache mode " << fr.value("cache_mode", std::string("keep"));
  if (fr.contains("loader_vs_device")) o << "; " << fr["loader_vs_device"].get<std::string>();
  if (!S3Line(fr).empty()) o << "\n- " << S3Line(fr);
  o << "\n\n| epoch | read MiB/s | resident in page cache | device GiB |\n|---|---|---|---|\n";
  for (const auto& e : fr["epochs"]) {
    o << "| " << e.value("epoch", 0) << " | " << F(e.value("read_mib_per_s", 0.0), 1) << " | " << Pct(e["resident_fraction"]) << " | "
      << Gib(e["device_bytes_read"]) << " |\n";
  }
  o << "\n";
  return o.str();
}

namespace {

// (checkpoint, write GiB/s, read GiB/s) rows and the phases' means, from summary.json's feedrate.save/load.
struct CheckpointRows {
  std::vector<std::array<std::string, 5>> rows;  // checkpoint, write GiB/s, write s, read GiB/s, read s
  std::string headline;
};

CheckpointRows CheckpointFigures(const ReportInput& in) {
  CheckpointRows c;
  const json& s = in.summary;
  const json fr = s.value("feedrate", json::object());
  const json save = fr.value("save", json::object()), load = fr.value("load", json::object());
  const json m = s.value("metric", json::object());
  c.headline = std::to_string(s.value("num_accelerators", 0)) + " rank(s), " + F(m.value("checkpoint_size_GB", 0.0), 3) +
               " GiB per checkpoint (scale " + F(fr.value("scale", 1.0), 4) + "), " + fr.value("status", std::string()) +
               "; write " + (save.empty() ? "-" : F(save.value("GiB_per_second_mean", 0.0), 3) + " GiB/s") + ", read " +
               (load.empty() ? "-" : F(load.value("GiB_per_second_mean", 0.0), 3) + " GiB/s") +
               " (slowest rank per checkpoint; rank 0 alone, as DLIO reports it: write " +
               (save.empty() ? "-" : F(save.value("rank0_dlio_compatible", json::object()).value("GiB_per_second_mean", 0.0), 3)) + ")";
  const json ws = save.value("checkpoints", json::array()), rs = load.value("checkpoints", json::array());
  for (size_t k = 0; k < std::max(ws.size(), rs.size()); ++k) {
    auto cell = [](const json& a, size_t i, const char* key, int d) { return i < a.size() ? F(a[i].value(key, 0.0), d) : std::string("-"); };
    c.rows.push_back({std::to_string(k + 1), cell(ws, k, "GiB_per_second", 3), cell(ws, k, "duration_seconds", 3),
                      cell(rs, k, "GiB_per_second", 3), cell(rs, k, "duration_seconds", 3)});
  }
  return c;
}

}  // namespace

std::string CheckpointHtml(const ReportInput& in) {
  const CheckpointRows c = CheckpointFigures(in);
  const json fr = in.summary.value("feedrate", json::object());
  std::string o = "<section class=\"run\"><h2>" + ("feedrate checkpoint: " + fr.value("workload", std::string())) + "</h2>";
  o += "<p class=\"answer\">" + (c.headline) + "</p><table><tr><th>checkpoint</th><th>write GiB/s</th><th>write s</th>"
       "<th>read GiB/s</th><th>read s</th></tr>";
  for (const auto& r : c.rows) {
    o += "<tr>";
    for (const auto& cell : r) o += "<td>" + (cell) + "</td>";
    o += "</tr>";
  }
  o += "</table><p>" + ("engine: " + fr.value("engine", std::string()) + "; read cache: " + fr.value("read_cache", std::string())) + "</p>";
  return o + "</section>";
}

std::string CheckpointMarkdown(const ReportInput& in) {
  const CheckpointRows c = CheckpointFigures(in);
  std::ostringstream o;
  o << "## feedrate checkpoint: " << in.summary.value("feedrate", json::object()).value("workload", std::string()) << " (" << in.dir
    << ")\n\n- " << c.headline << "\n\n| checkpoint | write GiB/s | write s | read GiB/s | read s |\n|---|---|---|---|---|\n";
  for (const auto& r : c.rows) o << "| " << r[0] << " | " << r[1] << " | " << r[2] << " | " << r[3] << " | " << r[4] << " |\n";
  o << "\n";
  return o.str();
}

}  // namespace feedrate
