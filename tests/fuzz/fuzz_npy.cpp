// Fuzzes the .npy header parser (magic, version, header length, the Python-dict header) and the whole-file
// reader that checks the data is all there.
#include "fuzz_util.h"
#include "loader/format/npy.h"
#include "loader/format/npz.h"
#include "loader/util/content_pattern.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedrate;
  (void)ParseNpyHeader(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  (void)NpyDataOffset(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  auto range = ContentRange(DataFormat::kNpy, reinterpret_cast<const char*>(data), size);  // run --verify's header skip
  if (range.ok() && (range->first > range->second || range->second > size)) __builtin_trap();
  fuzz::MemFile f(data, size);
  (void)DetectNumpyFileKind(f.fd(), f.size(), "fuzz.npy");
  auto a = ReadNpyFile(f.fd(), f.size(), "fuzz.npy");
  if (a.ok()) {
    uint64_t streamed = 0;
    (void)StreamArrayData(f.fd(), *a, "fuzz.npy", [&](const char*, size_t n) {
      streamed += n;
      return Status::Ok();
    });
  }
  return 0;
}
