// Payload classification with libprotobuf (generated from tf_example.proto).
#include "loader/format/tf_example.h"

#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <climits>

#include "loader/format/tf_example.pb.h"

namespace feedrate {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// True when `m` or any message inside it carries fields the schema does not know.
bool HasUnknownFields(const Message& m) {
  const auto* refl = m.GetReflection();
  if (!refl->GetUnknownFields(m).empty()) return true;
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const auto* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < refl->FieldSize(m, f); ++i) {
        if (HasUnknownFields(refl->GetRepeatedMessage(m, f, i))) return true;
      }
    } else if (HasUnknownFields(refl->GetMessage(m, f))) {
      return true;
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
