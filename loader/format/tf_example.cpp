// Payload classification with libprotobuf (generated from tf_example.proto).
#include "loader/format/tf_example.h"

#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <climits>

#include "loader/format/tf_example.pb.h"

namespace feedrate {
namespace {

// True when `m` carries fields the schema does not know. Walked through the generated accessors (not
// reflection: reflecting over map fields re-syncs their repeated view, which breaks under ThreadSanitizer with
// Debian's uninstrumented libprotobuf).
bool Unknown(const google::protobuf::Message& m) { return !m.GetReflection()->GetUnknownFields(m).empty(); }

bool HasUnknownFields(const tensorflow::Feature& f) {
  return Unknown(f) || (f.has_bytes_list() && Unknown(f.bytes_list())) || (f.has_float_list() && Unknown(f.float_list())) ||
         (f.has_int64_list() && Unknown(f.int64_list()));
}

bool HasUnknownFields(const tensorflow::Features& fs) {
  if (Unknown(fs)) return true;
  for (const auto& [key, f] : fs.feature()) {
    if (HasUnknownFields(f)) return true;
  }
  return false;
}

bool HasUnknownFields(const tensorflow::SequenceExample& m) {
  if (Unknown(m) || (m.has_context() && HasUnknownFields(m.context()))) return true;
  if (!m.has_feature_lists()) return false;
  if (Unknown(m.feature_lists())) return true;
  for (const auto& [key, list] : m.feature_lists().feature_list()) {
    if (Unknown(list)) return true;
    for (const auto& f : list.feature()) {
      if (HasUnknownFields(f)) return true;
    }
  }
  return false;
}

void Describe(const tensorflow::Feature& f, std::string* kind, uint64_t* count) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      *kind = "bytes_list";
      *count = static_cast<uint64_t>(f.bytes_list().value_size());
      break;
    case tensorflow::Feature::kFloatList:
      *kind = "float_list";
      *count = static_cast<uint64_t>(f.float_list().value_size());
      break;
    case tensorflow::Feature::kInt64List:
      *kind = "int64_list";
      *count = static_cast<uint64_t>(f.int64_list().value_size());
      break;
    default:
      *kind = "none";
      *count = 0;
  }
}

std::vector<FeatureSummary> Summarize(const tensorflow::Features& fs) {
  std::vector<FeatureSummary> out;
  for (const auto& [key, f] : fs.feature()) {
    FeatureSummary s{key, "", 0};
    Describe(f, &s.kind, &s.count);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

}  // namespace

PayloadSummary SummarizeTfRecordPayload(const char* payload, uint64_t n) {
  PayloadSummary s;
  s.type = "raw";
  tensorflow::SequenceExample m;  // a superset of Example on the wire
  if (n > static_cast<uint64_t>(INT_MAX) || !m.ParseFromArray(payload, static_cast<int>(n)) || HasUnknownFields(m)) {
    return s;
  }
  s.features = Summarize(m.context());
  if (!m.has_feature_lists()) {
    s.type = "Example";
    return s;
  }
  s.type = "SequenceExample";
  for (const auto& [key, fl] : m.feature_lists().feature_list()) {
    FeatureListSummary l{key, static_cast<uint64_t>(fl.feature_size()), ""};
    uint64_t unused = 0;
    if (fl.feature_size() > 0) Describe(fl.feature(0), &l.kind, &unused);
    s.feature_lists.push_back(std::move(l));
  }
  std::sort(s.feature_lists.begin(), s.feature_lists.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return s;
}

}  // namespace feedrate
