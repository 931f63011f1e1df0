// The configuration's closed sets (dataset.format, reader.data_loader, feedrate.order, feedrate.engine, the
// accelerator memory) as enums:
// parsed once where the workload is read, then passed by value to every layer that branches on them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace feedrate {

enum class DataFormat : unsigned char {
  kNpz, kNpy, kHdf5, kTfRecord, kJpeg, kPng, kCsv, kIndexedBinary, kMmapIndexedBinary, kParquet, kSynthetic
};
enum class DataLoader : unsigned char { kPyTorch, kTensorFlow, kDali, kNativeDali, kCustom, kSynthetic };
enum class SampleOrder : unsigned char { kDlio, kShuffled };  // DLIO v2.0's order per loader; a seeded shuffle
enum class EngineKind : unsigned char { kAuto, kUring, kPosix };  // auto: io_uring, falling back to POSIX
// run --accelerator-memory: where a batch must be before it counts as delivered (docs/gpu.md).
enum class AcceleratorMemory : unsigned char { kHost, kPinned, kDevice };
// run --gds: how `device` memory is filled: cuFile reads straight into it (on), engine reads into pinned memory and
// a copy (off), or cuFile where it opens and registers, else the copy, the reason recorded (auto).
enum class GdsMode : unsigned char { kAuto, kOn, kOff };
// feedrate.compute: how an emulated accelerator computes a step: a sleep (DLIO's), or a kernel on its GPU.
enum class ComputeKind : unsigned char { kSleep, kGpu };
// --rules: the MLPerf Storage rules edition whose DLIO a run emulates (loader/util/dlio_edition.h holds what each
// one's DLIO does): v3.0 (mlpstorage 3.0's pin, the default), v2.0 (mlpstorage 2.0's), upstream (argonne-lcf).
enum class DlioEdition : unsigned char { kV3_0, kV2_0, kUpstream };

// DLIO's spelling of each value. A DataFormat's name is also the extension DLIO gives its files ("npz", ...).
const char* Name(DataFormat v);
const char* Name(DataLoader v);
const char* Name(SampleOrder v);
const char* Name(EngineKind v);
const char* Name(AcceleratorMemory v);
const char* Name(GdsMode v);
const char* Name(ComputeKind v);
const char* Name(DlioEdition v);

// The value a name spells, or nullopt; `Names<E>()` lists every accepted name (for "expected one of" messages).
template <typename E>
std::optional<E> Parse(std::string_view name);
template <typename E>
std::vector<std::string_view> Names();

inline bool IsImage(DataFormat f) { return f == DataFormat::kJpeg || f == DataFormat::kPng; }

}  // namespace feedrate
