// The escaping rules of output_text.h.
#include "loader/util/output_text.h"

#include <cstdint>

namespace feedrate {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// C1 controls (U+0080..U+009F) in their two-byte form.
bool IsC1(std::string_view s, size_t i) {
  return static_cast<unsigned char>(s[i]) == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0;
}

std::string Escaped(std::string_view s, std::string (*one)(char)) {
  std::string o;
  for (char c : PlainText(s)) o += one(c);
  return o;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string PlainText(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    if (n == 0) {
      o += kReplacement;
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
      o += ' ';
    } else if (c < 0x20 || c == 0x7F || IsC1(s, i)) {
      o += kReplacement;
    } else {
      o.append(s.substr(i, n));
    }
    i += n;
  }
  return o;
}

std::string HtmlText(std::string_view s) {
  return Escaped(s, [](char c) -> std::string {
    switch (c) {
      case '&': return "&amp;";
      case '<': return "&lt;";
      case '>': return "&gt;";
      case '"': return "&quot;";
      case '\'': return "&#39;";
      default: return std::string(1, c);
    }
  });
}

std::string MarkdownText(std::string_view s) {
  return Escaped(s, [](char c) -> std::string {
    switch (c) {
      case '<': return "&lt;";
      case '>': return "&gt;";
      case '&': return "&amp;";
      case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '#':
        return std::string("\\") + c;
      default: return std::string(1, c);
    }
  });
}

std::string CsvCell(std::string_view s) {
  std::string v = PlainText(s);
  if (!v.empty() && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@')) {
    // (a number such as -1.5 is left alone: it is not a formula)
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size()) v.insert(0, 1, '\'');
  }
  if (v.find_first_of(",\"") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool IsPlainName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7F) return false;
  }
  return true;
}

nlohmann::json MapStrings(const nlohmann::json& j, std::string (*f)(std::string_view)) {
  if (j.is_string()) return f(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(MapStrings(v, f));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = MapStrings(it.value(), f);
    return out;
  }
  return j;
}

namespace {
void CollectInvalid(const nlohmann::json& j, const std::string& path, size_t limit, std::vector<std::string>* out) {
  if (out->size() >= limit) return;
  if (j.is_string() && !IsValidUtf8(j.get_ref<const std::string&>())) out->push_back(path.empty() ? "(value)" : path);
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) CollectInvalid(j[i], path + "[" + std::to_string(i) + "]", limit, out);
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string key = IsValidUtf8(it.key()) ? it.key() : PlainText(it.key());
      CollectInvalid(it.value(), path.empty() ? key : path + "." + key, limit, out);
    }
  }
}
}  // namespace

std::vector<std::string> InvalidUtf8Fields(const nlohmann::json& j, size_t limit) {
  std::vector<std::string> out;
  CollectInvalid(j, "", limit, &out);
  return out;
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace feedrate
