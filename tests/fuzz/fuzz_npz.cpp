// Fuzzes the zip reader behind .npz: end-of-central-directory search, zip64 records, central and local headers,
// member headers (inflating just enough of deflated members), and streaming a member's data with its CRC check.
#include "fuzz_util.h"
#include "loader/format/npz.h"
#include "loader/format/zip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedrate;
  fuzz::MemFile f(data, size);
  (void)ReadZipDirectory(f.fd(), f.size(), "fuzz.npz");
  auto arrays = ReadNpzArrays(f.fd(), f.size(), "fuzz.npz");
  if (arrays.ok()) {
    for (const auto& a : *arrays) {
      (void)StreamArrayData(f.fd(), a, "fuzz.npz", [](const char*, size_t) { return Status::Ok(); });
    }
  }
  return 0;
}
