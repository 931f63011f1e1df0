// What a TFRecord payload is: a tf.train.Example (feature keys, kinds and value counts), a SequenceExample
// (context plus feature lists) or raw bytes; decoded with libprotobuf. Used by `inspect`, not the hot path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace feedrate {

struct FeatureSummary {
  std::string key;
  std::string kind;  // bytes_list | float_list | int64_list | none (a Feature with no list set)
  uint64_t count = 0;
};

struct FeatureListSummary {
  std::string key;
  uint64_t num_steps = 0;
  std::string kind;  // kind of the first step ("" when there are no steps)
};

struct PayloadSummary {
  std::string type;  // "Example", "SequenceExample" or "raw"
  std::vector<FeatureSummary> features;           // Example features, or SequenceExample context; sorted by key
  std::vector<FeatureListSummary> feature_lists;  // SequenceExample only; sorted by key
};

// Decodes `payload` strictly: a message with fields unknown to the schema (or that does not parse) is "raw".
// An Example and a SequenceExample share field 1; a payload carrying field 2 (feature_lists) is a
// SequenceExample.
PayloadSummary SummarizeTfRecordPayload(const char* payload, uint64_t n);

}  // namespace feedrate
