// The workload's YAML tree before its values are read: v1.0 aliases, structure limits, section shapes, credentials,
// unknown keys, and --param/Hydra overrides applied. Internal to loader/config (workload_config.cpp's helpers).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate::workload_yaml {

// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> SplitDots(const std::string& s);

// A Hydra-packaged file may wrap everything in `workload:`; the workload itself is what it wraps (else `root`).
YAML::Node Unwrapped(const YAML::Node& root);

// Moves v1.0/alias spellings (and DLIO's `data_reader` section) in a freshly loaded tree to their canonical keys.
// Throws ConfigError where both spellings are given.
void NormalizeAliases(YAML::Node root, const std::string& source);

// Walks `node` as its readers will (aliases expanded), refusing a map that names a key twice (yaml-cpp keeps both;
// lookups find the first, results record the last) and a tree past kMaxYamlNodes counted in *nodes (shared across
// the file and its overrides). Call before anything else walks it.
void CheckStructure(const YAML::Node& node, const std::string& source, uint64_t* nodes);

// A section (dataset, reader, train, ...) given a value that is not a mapping (`dataset: 5`): said as such, before an
// override into it or a missing key is blamed.
void CheckSectionShapes(const YAML::Node& root, const std::string& source);

// Applies one override ("[+[+]][workload.]key.path=value") to `root`, counting its nodes into *nodes; returns the
// canonical key it set. Throws ConfigError for a credential's key (its value never shown), a malformed or unknown
// key, or a value that is not YAML.
std::string ApplyOverride(YAML::Node root, const std::string& override_text, uint64_t* nodes);

// Refuses any key, at any depth, that names a credential (IsSecretKey): workload settings are copied into
// config.yaml and summary.json, so a secret given there would land in every result. The value is never printed.
void RefuseSecrets(const YAML::Node& node, const std::string& prefix, const std::string& source);

// Refuses a key DLIO does not accept (with a suggestion); appends to *warnings each key Feedrate accepts but does
// not act on yet.
void CheckKeys(const YAML::Node& node, const std::string& prefix, const std::string& source,
               std::vector<std::string>* warnings);

}  // namespace feedrate::workload_yaml
