// Names of the configuration's enums and their parsing: one table per enum, in declaration order.
#include "loader/util/choices.h"

#include <array>

namespace feedrate {
namespace {

template <typename E>
struct Table;
template <>
struct Table<DataFormat> {
  static constexpr std::array<std::string_view, 11> kNames = {
      "npz", "npy", "hdf5", "tfrecord", "jpeg", "png", "csv", "indexed_binary", "mmap_indexed_binary", "parquet",
      "synthetic"};
};
template <>
struct Table<DataLoader> {
  static constexpr std::array<std::string_view, 6> kNames = {"pytorch", "tensorflow", "dali", "native_dali",
                                                             "custom", "synthetic"};
};
template <>
struct Table<SampleOrder> {
  static constexpr std::array<std::string_view, 2> kNames = {"dlio", "shuffled"};
};
template <>
struct Table<EngineKind> {
  static constexpr std::array<std::string_view, 3> kNames = {"auto", "uring", "posix"};
};
template <>
struct Table<AcceleratorMemory> {
  static constexpr std::array<std::string_view, 3> kNames = {"host", "pinned", "device"};
};

template <>
struct Table<ComputeKind> {
  static constexpr std::array<std::string_view, 2> kNames = {"sleep", "gpu"};
};
template <>
struct Table<GdsMode> {
  static constexpr std::array<std::string_view, 3> kNames = {"auto", "on", "off"};
};

template <>
struct Table<DlioEdition> {
  static constexpr std::array<std::string_view, 3> kNames = {"v3.0", "v2.0", "upstream"};
};

static_assert(Table<DataFormat>::kNames.size() == static_cast<size_t>(DataFormat::kSynthetic) + 1);
static_assert(Table<DataLoader>::kNames.size() == static_cast<size_t>(DataLoader::kSynthetic) + 1);
static_assert(Table<SampleOrder>::kNames.size() == static_cast<size_t>(SampleOrder::kShuffled) + 1);
static_assert(Table<EngineKind>::kNames.size() == static_cast<size_t>(EngineKind::kPosix) + 1);
static_assert(Table<AcceleratorMemory>::kNames.size() == static_cast<size_t>(AcceleratorMemory::kDevice) + 1);
static_assert(Table<GdsMode>::kNames.size() == static_cast<size_t>(GdsMode::kOff) + 1);
static_assert(Table<ComputeKind>::kNames.size() == static_cast<size_t>(ComputeKind::kGpu) + 1);
static_assert(Table<DlioEdition>::kNames.size() == static_cast<size_t>(DlioEdition::kUpstream) + 1);

template <typename E>
const char* NameOf(E v) {
  return Table<E>::kNames.at(static_cast<size_t>(v)).data();  // each literal is NUL-terminated
}

}  // namespace

const char* Name(DataFormat v) { return NameOf(v); }
const char* Name(DataLoader v) { return NameOf(v); }
const char* Name(SampleOrder v) { return NameOf(v); }
const char* Name(EngineKind v) { return NameOf(v); }
const char* Name(AcceleratorMemory v) { return NameOf(v); }
const char* Name(GdsMode v) { return NameOf(v); }
const char* Name(ComputeKind v) { return NameOf(v); }
const char* Name(DlioEdition v) { return NameOf(v); }

template <typename E>
std::optional<E> Parse(std::string_view name) {
  const auto& names = Table<E>::kNames;
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == name) return static_cast<E>(k);
  }
  return std::nullopt;
}

template <typename E>
std::vector<std::string_view> Names() {
  return {Table<E>::kNames.begin(), Table<E>::kNames.end()};
}

template std::optional<DataFormat> Parse<DataFormat>(std::string_view);
template std::optional<DataLoader> Parse<DataLoader>(std::string_view);
template std::optional<SampleOrder> Parse<SampleOrder>(std::string_view);
template std::optional<EngineKind> Parse<EngineKind>(std::string_view);
template std::optional<AcceleratorMemory> Parse<AcceleratorMemory>(std::string_view);
template std::optional<GdsMode> Parse<GdsMode>(std::string_view);
template std::optional<ComputeKind> Parse<ComputeKind>(std::string_view);
template std::optional<DlioEdition> Parse<DlioEdition>(std::string_view);
template std::vector<std::string_view> Names<DataFormat>();
template std::vector<std::string_view> Names<DataLoader>();
template std::vector<std::string_view> Names<SampleOrder>();
template std::vector<std::string_view> Names<EngineKind>();
template std::vector<std::string_view> Names<AcceleratorMemory>();
template std::vector<std::string_view> Names<GdsMode>();
template std::vector<std::string_view> Names<ComputeKind>();
template std::vector<std::string_view> Names<DlioEdition>();

}  // namespace feedrate
