// The workload's YAML tree before its values are read: aliases, structure limits, section shapes, credentials,
// unknown keys, overrides (workload_yaml.h); and the credential checks results use (workload_config.h).
#include "loader/config/workload_yaml.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "loader/config/workload_config.h"

namespace feedrate {
namespace workload_yaml {
namespace {

// v1.0 spellings (and DLIO's `data_reader` section) mapped to the v2.0 keys.
const std::vector<std::pair<std::string, std::string>>& Aliases() {
  static const std::vector<std::pair<std::string, std::string>> kAliases = {
      {"dataset.record_length", "dataset.record_length_bytes"},
      {"dataset.record_length_stdev", "dataset.record_length_bytes_stdev"},
      {"dataset.record_length_resize", "dataset.record_length_bytes_resize"},
      {"feedrate.decode_images", "feedrate.decode"},  // its first name, when only images decoded
  };
  return kAliases;
}

// The most nodes a workload's YAML may hold once its aliases are expanded: DLIO's files hold about a hundred. An
// alias names a node, so a few hundred bytes of nested aliases stand for billions of nodes, which anything that
// walks or copies the tree (YAML::Clone, config.yaml, summary.json) would build.
constexpr uint64_t kMaxYamlNodes = 100'000;

std::string CanonicalKey(std::string key) {
  if (key.starts_with("data_reader.")) key = "reader." + key.substr(12);
  for (const auto& [alias, canonical] : Aliases()) {
    if (key == alias) return canonical;
  }
  return key;
}

// Sets tree[path] = value, creating maps on the way (yaml-cpp nodes are reference-like handles).
void SetPath(YAML::Node root, const std::vector<std::string>& path, const YAML::Node& value, const std::string& what) {
  YAML::Node cur = root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    YAML::Node next = cur[path[i]];
    if (next.IsDefined() && !next.IsNull() && !next.IsMap()) {
      throw ConfigError(what + ": cannot set '" + path[i + 1] + "' inside '" + path[i] + "', which is not a section");
    }
    if (!next.IsDefined() || next.IsNull()) {
      cur[path[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[path[i]];
    }
    cur.reset(next);
  }
  cur[path.back()] = value;
}

}  // namespace

std::vector<std::string> SplitDots(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, '.')) parts.push_back(p);
  return parts;
}

YAML::Node Unwrapped(const YAML::Node& root) {
  return root.IsMap() && root.size() == 1 && root["workload"] && root["workload"].IsMap() ? root["workload"] : root;
}

void NormalizeAliases(YAML::Node root, const std::string& source) {
  if (root["data_reader"]) {
    if (root["reader"]) throw ConfigError(source + ": both 'reader' and 'data_reader' sections are present");
    root["reader"] = root["data_reader"];
    root.remove("data_reader");
  }
  for (const auto& [alias, canonical] : Aliases()) {
    auto a = SplitDots(alias), c = SplitDots(canonical);
    YAML::Node section = root[a[0]];
    if (!section.IsMap() || !section[a[1]]) continue;
    if (section[c[1]]) {
      throw ConfigError(source + ": both '" + alias + "' and '" + canonical + "' are set; use '" + canonical + "'");
    }
    section[c[1]] = YAML::Clone(section[a[1]]);
    section.remove(a[1]);
  }
}

void CheckStructure(const YAML::Node& node, const std::string& source, uint64_t* nodes) {
  if (++*nodes > kMaxYamlNodes) {
    throw ConfigError(source + ": more than " + std::to_string(kMaxYamlNodes) + " YAML nodes once its aliases are "
                      "expanded (near line " + std::to_string(node.Mark().line + 1) + "): a workload is a few hundred");
  }
  if (node.IsSequence()) {
    for (const auto& item : node) CheckStructure(item, source, nodes);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;  // scalar key -> where it was first given
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it->first.IsScalar()) {
      const YAML::Mark here = it->first.Mark();
      if (auto [at, added] = seen.emplace(it->first.Scalar(), here); !added) {
        const YAML::Mark first = at->second;
        const std::string where = first.line == here.line
                                      ? "line " + std::to_string(here.line + 1) + ", columns " + std::to_string(first.column + 1) +
                                            " and " + std::to_string(here.column + 1)
                                      : "lines " + std::to_string(first.line + 1) + " and " + std::to_string(here.line + 1);
        throw ConfigError(source + ": key '" + it->first.Scalar() + "' is given twice in one mapping (" + where +
                          "): YAML allows one");
      }
    }
    CheckStructure(it->second, source, nodes);
  }
}

void CheckSectionShapes(const YAML::Node& root, const std::string& source) {
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!it->first.IsScalar()) continue;  // CheckKeys names these
    const std::string key = it->first.Scalar();
    if (!IsKnownSection(key) || LookupKey(key) != nullptr || it->second.IsMap() || it->second.IsNull()) continue;
    throw ConfigError(source + ": key '" + key + "' (line " + std::to_string(it->first.Mark().line + 1) +
                      ") is a section of settings and must be a mapping (e.g. " + key + ": {...}), not " +
                      (it->second.IsSequence() ? "a list" : "'" + it->second.Scalar() + "'"));
  }
}

void RefuseSecrets(const YAML::Node& node, const std::string& prefix, const std::string& source) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) RefuseSecrets(node[i], prefix + "[" + std::to_string(i) + "]", source);
    return;
  }
  if (!node.IsMap()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.IsScalar() ? it->first.Scalar() : std::string();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (IsSecretKey(name)) {
      throw ConfigError(source + ": key " + key + ": looks like a credential; Feedrate takes S3 credentials from "
                        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials only, never from workload settings "
                        "(they are copied into the results)");
    }
    RefuseSecrets(it->second, key, source);
  }
}

void CheckKeys(const YAML::Node& node, const std::string& prefix, const std::string& source,
               std::vector<std::string>* warnings) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {  // YAML's "? key" form makes a list or a map a key: never a DLIO key
      throw ConfigError(source + ": a key " + (prefix.empty() ? "at the top level" : "under '" + prefix + "'") +
                        " is a YAML " + (it->first.IsMap() ? "map" : it->first.IsSequence() ? "list" : "null") +
                        ", not a name (line " + std::to_string(it->first.Mark().line + 1) + ")");
    }
    std::string key = prefix.empty() ? it->first.as<std::string>() : prefix + "." + it->first.as<std::string>();
    const KeySupport* s = LookupKey(key);
    if (s == nullptr) {
      if (it->second.IsMap() && IsKnownSection(key)) {
        CheckKeys(it->second, key, source, warnings);
        continue;
      }
      std::string hint = SuggestKey(key);
      throw ConfigError(source + ": unknown key '" + key + "' (DLIO does not accept it)" +
                        (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    if (*s == KeySupport::kNotYet) {
      warnings->push_back(key);
    }
    // A key without effect still holds one value: a list or a map there (output.folder given a list, or an alias
    // bomb's expansion, ran and was copied into summary.json) is refused as DLIO would fail on it.
    if (*s == KeySupport::kNoEffect && (it->second.IsSequence() || it->second.IsMap()) && key.find('.') != std::string::npos &&
        key != "profiling.iostat_devices") {
      throw ConfigError(source + ": key " + key + ": expected one value, not a YAML " +
                        (it->second.IsMap() ? "map" : "list") + " (line " + std::to_string(it->second.Mark().line + 1) + ")");
    }
    // `model` is a section in v2.0 files (a plain name before); computation_time and preprocess_time may be
    // {mean, stdev, type, ...}.
    if (it->second.IsMap() && (key == "model" || key == "train.computation_time" || key == "reader.preprocess_time")) {
      CheckKeys(it->second, key, source, warnings);
    }
  }
}

std::string ApplyOverride(YAML::Node root, const std::string& ov, uint64_t* nodes) {
  const size_t eq = ov.find('=');
  if (IsSecretKey(ov.substr(0, eq))) {
    throw ConfigError("override of " + ov.substr(0, eq) + ": looks like a credential; Feedrate takes S3 credentials "
                      "from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials only (the value is not shown)");
  }
  const std::string what = "override '" + RedactSecrets(ov) + "'";
  if (eq == std::string::npos || eq == 0) throw ConfigError(what + ": expected key.path=value");
  std::string key = ov.substr(0, eq);
  const size_t plus = key.find_first_not_of('+');
  key = key.substr(plus == std::string::npos ? key.size() : plus);
  if (key.starts_with("workload.")) key = key.substr(9);
  key = CanonicalKey(key);
  if (key.empty()) throw ConfigError(what + ": empty key");
  YAML::Node value;
  try {
    value = YAML::Load(ov.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(what + ": value is not valid YAML: " + e.what());
  }
  CheckStructure(value, what, nodes);
  if (LookupKey(key) == nullptr) {
    const std::string hint = SuggestKey(key);
    throw ConfigError(what + ": unknown key '" + key + "' (DLIO does not accept it)" +
                      (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  SetPath(root, SplitDots(key), value, what);
  return key;
}

}  // namespace workload_yaml

bool IsSecretKey(std::string_view key) {
  std::string k;
  for (char ch : key) k += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* joined : {"access_key", "accesskey", "private_key", "privatekey", "api_key", "apikey", "secret",
                             "password", "passwd", "credential"}) {
    if (k.find(joined) != std::string::npos) return true;
  }
  // "token" as a word of the key (session_token, auth-token, token), not inside another (max_tokens, tokenizer).
  size_t start = 0;
  while (start <= k.size()) {
    const size_t end = k.find_first_of("._-/[]+ ", start);
    const std::string word = k.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (word == "token" || word == "auth" || word == "authorization") return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::string RedactSecrets(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t end = std::min(text.find(' ', i), text.size());
    std::string word(text.substr(i, end - i));
    // key=value with a credential's key (a --param, a Hydra override)
    if (const size_t eq = word.find('='); eq != std::string::npos && IsSecretKey(word.substr(0, eq))) {
      word = word.substr(0, eq + 1) + "<redacted>";
    }
    // scheme://user:password@host
    if (const size_t scheme = word.find("://"); scheme != std::string::npos) {
      const size_t at = word.find('@', scheme), slash = word.find('/', scheme + 3);
      if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
        word = word.substr(0, scheme + 3) + "<redacted>" + word.substr(at);
      }
    }
    out += word;
    if (end < text.size()) out += ' ';
    i = end + 1;
  }
  return out;
}

}  // namespace feedrate
