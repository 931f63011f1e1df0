// Fuzzes the workload configuration parser: DLIO workload YAML (yaml-cpp plus our schema checks, aliases and
// validation) and Hydra-style overrides. Input: YAML text, then optionally a line "--" and one override per line.
// ConfigError is the parser's documented way to refuse input (caught in cli/); anything else is a bug.
#include <cstdint>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "loader/config/workload_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  const size_t sep = text.find("\n--\n");
  if (sep != std::string::npos) {
    std::istringstream rest(text.substr(sep + 4));
    for (std::string line; std::getline(rest, line);) overrides.push_back(line);
    text.resize(sep);
  }
  try {
    (void)feedrate::ParseWorkload(text, "fuzz.yaml", "fuzz", overrides);
  } catch (const feedrate::ConfigError&) {
  }
  return 0;
}
