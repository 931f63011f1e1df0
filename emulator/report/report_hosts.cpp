// The report's per-host part of a multi-host Feedrate run: each host's ranks, accelerators, MiB/s read and
// received over the network, AU spread, CPU and start skew, and what one step's agreement costs.
#include <cstdio>

#include "emulator/report/report.h"
#include "emulator/report/svg_chart.h"

namespace feedrate {
namespace {

using nlohmann::json;

std::string F(const json& o, const char* key, int decimals, double scale = 1) {
  const json v = o.value(key, json());
  if (!v.is_number()) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, scale * v.get<double>());
  return b;
}

struct HostRow {
  std::string cells[8];
};

const char* const kHeader[8] = {"host", "ranks", "accelerators", "read MiB/s", "network rx MiB/s", "AU min / mean / max %",
                                "CPU busy", "start skew (ms)"};

std::vector<HostRow> Rows(const json& fr) {
  std::vector<HostRow> rows;
  for (const auto& h : fr.value("hosts", json::array())) {
    rows.push_back({{h.value("hostname", std::string()), F(h, "ranks", 0), F(h, "accelerators", 0),
                     F(h, "read_mib_per_s", 1), F(h, "net_rx_mib_per_s", 1),
                     F(h, "au_min_pct", 1) + " / " + F(h, "au_mean_pct", 1) + " / " + F(h, "au_max_pct", 1),
                     F(h, "cpu_utilisation", 0, 100) + "%", F(h, "start_skew_seconds", 1, 1000)}});
  }
  return rows;
}

std::string BarrierLine(const json& fr) {
  if (!fr.contains("step_barrier")) return "";
  const json& b = fr["step_barrier"];
  std::string s = "step barrier: " + b.value("mode", std::string("flat"));
  auto cal = [&](const char* key, const char* name) {
    const json c = b.value(key, json());
    return c.is_object() ? std::string(", ") + name + " p50 " + F(c, "p50", 0) + " us (p99 " + F(c, "p99", 0) + ")" : "";
  };
  return s + cal("calibration_flat_us", "flat") + cal("calibration_hierarchical_us", "hierarchical") +
         " per step when every rank is ready";
}

}  // namespace

std::string HostsHtml(const ReportInput& in) {
  const json fr = in.summary.value("feedrate", json::object());
  const auto rows = Rows(fr);
  if (rows.size() < 2) return "";
  std::string o = "<h3>Hosts</h3><table><tr>";
  for (int i = 0; i < 8; ++i) o += std::string("<th>") + kHeader[i] + "</th>";
  o += "</tr>";
  for (const auto& r : rows) {
    o += "<tr>";
    for (int i = 0; i < 8; ++i) o += "<td>" + (r.cells[i]) + "</td>";
    o += "</tr>";
  }
  o += "</table>";
  const std::string barrier = BarrierLine(fr);
  if (!barrier.empty()) o += "<p>" + (barrier) + "</p>";
  return o;
}

std::string HostsMarkdown(const ReportInput& in) {
  const json fr = in.summary.value("feedrate", json::object());
  const auto rows = Rows(fr);
  if (rows.size() < 2) return "";
  std::string o = "### Hosts\n\n|";
  for (int i = 0; i < 8; ++i) o += std::string(" ") + kHeader[i] + " |";
  o += "\n|";
  for (int i = 0; i < 8; ++i) o += "---|";
  o += "\n";
  for (const auto& r : rows) {
    o += "|";
    for (int i = 0; i < 8; ++i) o += " " + r.cells[i] + " |";
    o += "\n";
  }
  const std::string barrier = BarrierLine(fr);
  return o + (barrier.empty() ? "" : "\n" + barrier + "\n") + "\n";
}

}  // namespace feedrate
