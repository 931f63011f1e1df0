// MLPerf-style results.json / results.csv rows from run directories.
#include "emulator/results/mlperf_export.h"
#include "loader/util/output_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

namespace feedrate {

namespace {

using nlohmann::json;

// mlpstorage: "workload=unet3d_h100" -> accelerator "h100" (the part after the first '_').
std::string AcceleratorOf(const std::string& workload) {
  const auto us = workload.find('_');
  return us == std::string::npos ? "" : workload.substr(us + 1);
}

// ClusterInformation.as_dict as mlpstorage builds it from summary.json (host_memory_GB, host_cpu_count).
json SystemInfo(const json& summary, const std::string& method) {
  const json mem = summary.value("host_memory_GB", json::array()), cpus = summary.value("host_cpu_count", json::array());
  if (!mem.is_array() || !cpus.is_array()) return nullptr;
  std::vector<std::string> names;
  for (const auto& h : summary.value("feedrate", json::object()).value("hosts", json::array())) {
    names.push_back(h.value("hostname", std::string()));
  }
  json hosts = json::array();
  double total = 0, lo = 0, hi = 0;
  int64_t cores = 0;
  for (size_t i = 0; i < mem.size(); ++i) {
    const double bytes = std::floor((mem[i].is_number() ? mem[i].get<double>() : 0) * 1024 * 1024 * 1024);
    const int64_t c = i < cpus.size() && cpus[i].is_number() ? cpus[i].get<int64_t>() : 0;
    total += bytes;
    cores += c;
    lo = i == 0 ? bytes : std::min(lo, bytes);
    hi = std::max(hi, bytes);
    json h = {{"hostname", names.size() == mem.size() && !names[i].empty() ? names[i] : "host_" + std::to_string(i)},
              {"memory", {{"total", static_cast<int64_t>(bytes)}}},
              {"collection_timestamp", nullptr}};
    if (c > 0) h["cpu"] = {{"num_cores", c}};
    hosts.push_back(h);
  }
  return {{"total_memory_bytes", static_cast<int64_t>(total)}, {"total_cores", cores}, {"num_hosts", mem.size()},
          {"min_memory_bytes", static_cast<int64_t>(lo)}, {"max_memory_bytes", static_cast<int64_t>(hi)},
          {"collection_method", method}, {"collection_timestamp", summary.value("start", json())}, {"hosts", hosts}};
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void Flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {  // an empty object adds no column, as in mlpstorage's flatten
    for (auto it = j.begin(); it != j.end(); ++it) Flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j;
}

// repr(text): single quotes unless the text holds a single quote and no double one; escapes as Python writes them.
std::string PythonRepr(const std::string& text) {
  const char quote = text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
  std::string r(1, quote);
  for (unsigned char c : text) {
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c == '\n') {
      r += "\\n";
    } else if (c == '\r') {
      r += "\\r";
    } else if (c == '\t') {
      r += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      r += b;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + quote;
}

}  // namespace

// repr(float) as Python 3 writes it: the shortest digits that read back as the same double (std::to_chars; the
// Grisu2 digits nlohmann::json dumps are longer for about 1 double in 600), in positional notation for decimal
// exponents -4..15 and as d.ddde+XX otherwise, with ".0" on whole numbers.
std::string PythonFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // [-]d[.ddd]e[+-]XX
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t epos = sci.find('e');
  const int exp = std::stoi(sci.substr(epos + 1));
  std::string digits = sci.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  if (exp < -4 || exp >= 16) {
    std::string mant = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + mant + e;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const size_t whole = static_cast<size_t>(exp) + 1;
  if (digits.size() <= whole) return sign + digits + std::string(whole - digits.size(), '0') + ".0";
  return sign + digits.substr(0, whole) + "." + digits.substr(whole);
}

namespace {

// str(value) as Python prints what json.load gave it: True/False, None, 'text' inside lists, [a, b].
std::string PythonStr(const json& v, bool nested) {
  if (v.is_null()) return nested ? "None" : "";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_string()) return nested ? PythonRepr(v.get<std::string>()) : v.get<std::string>();
  if (v.is_number_float()) return PythonFloatRepr(v.get<double>());
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + PythonStr(v[i], true);
    return s + "]";
  }
  if (v.is_object()) {
    std::string s = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it, first = false) s += (first ? "'" : ", '") + it.key() + "': " + PythonStr(it.value(), true);
    return s + "}";
  }
  return v.dump();
}

}  // namespace

json MlperfRunRow(const ReportInput& run) {
  const json& s = run.summary;
  const bool ours = run.kind == "feedrate run" || run.kind == "feedrate checkpoint";
  json row;
  row["run_id"] = run.dir;
  row["benchmark_type"] = run.kind == "feedrate checkpoint" ? "checkpointing" : "training";
  row["command"] = "run_benchmark";
  row["num_processes"] = s.value("num_accelerators", json());
  row["metrics"] = s.value("metric", json::object());
  if (ours) {
    const json fr = s["feedrate"];
    const json cfg = fr.value("config", json::object());
    // A checkpoint run's model as mlpstorage names it (llama3-8b), else the model's own name.
    const json fm = fr.contains("model") && fr["model"].is_object() ? fr["model"] : json();
    row["model"] = !fm.is_null() && !fm.value("mlpstorage_name", std::string()).empty() ? fm["mlpstorage_name"]
                   : !fm.is_null() ? fm.value("name", json())
                                   : cfg.value("model", json::object()).value("name", s.value("model", json()));
    row["parameters"] = cfg;
    row["system_info"] = SystemInfo(s, "feedrate_summary");
    const std::string acc = AcceleratorOf(fr.value("workload", std::string()));
    if (!acc.empty()) row["accelerator"] = acc;
    row["tool"] = "feedrate " + fr.value("version", std::string());
    if (fr.contains("validity")) {
      row["category"] = Lower(fr["validity"].value("category", std::string()));
      row["issues"] = fr["validity"].value("reasons", json::array());
    }
  } else {
    const json& w = run.dlio_workload;
    json model = w.is_object() ? w.value("model", json()) : json();
    row["model"] = model.is_object() ? model.value("name", json()) : s.value("model", json());
    row["parameters"] = w.is_object() ? w : json::object();
    row["system_info"] = SystemInfo(s, "dlio_summary");
    if (run.dlio_overrides.is_array()) {
      for (const auto& o : run.dlio_overrides) {
        const std::string text = o.is_string() ? o.get<std::string>() : "";
        if (text.rfind("workload=", 0) == 0 && !AcceleratorOf(text.substr(9)).empty()) row["accelerator"] = AcceleratorOf(text.substr(9));
      }
    }
    row["tool"] = "dlio";
  }
  return row;
}

std::string MlperfResultsCsv(const json& rows) {
  std::vector<std::map<std::string, json>> flat;
  std::map<std::string, bool> columns;
  for (const auto& r : rows) {
    flat.emplace_back();
    Flatten(r, "", flat.back());
    for (const auto& [k, v] : flat.back()) columns[k] = true;
  }
  std::string out;
  bool first = true;
  for (const auto& [k, unused] : columns) out += (first ? "" : ",") + CsvCell(k), first = false;
  out += "\n";
  for (const auto& f : flat) {
    first = true;
    for (const auto& [k, unused] : columns) {
      const auto it = f.find(k);
      out += (first ? "" : ",") + (it == f.end() ? std::string() : CsvCell(PythonStr(it->second, false)));
      first = false;
    }
    out += "\n";
  }
  return out;
}

}  // namespace feedrate
