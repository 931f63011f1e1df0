// DLIO npy writer: numpy's header (MakeNpyHeader, identical to np.save's) followed by the raw uint8 data.
#include "datagen/npy_writer.h"

#include <algorithm>

#include "datagen/temp_file.h"
#include "loader/format/npy.h"

namespace feedrate {

uint64_t DlioNpyFileSize(const NpyFileSpec& s) {
  return MakeNpyHeader("|u1", {s.d1, s.d2, s.samples}).size() + s.d1 * s.d2 * s.samples;
}

Status WriteDlioNpy(const std::string& path, const NpyFileSpec& s, const ContentSpec& content, AlignedBuffer* scratch) {
  const std::string header = MakeNpyHeader("|u1", {s.d1, s.d2, s.samples});
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(header.data(), header.size(), 0));
  ContentSource rng(content);
  FEEDRATE_RETURN_IF_ERROR(file.WriteRandom(rng, s.d1 * s.d2 * s.samples, header.size(), scratch));
  return file.Commit();
}

}  // namespace feedrate
