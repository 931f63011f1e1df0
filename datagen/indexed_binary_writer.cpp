// indexed_binary writer.
#include "datagen/indexed_binary_writer.h"

#include <algorithm>
#include <vector>

#include "datagen/temp_file.h"

namespace feedrate {

uint64_t IndexedBinaryFileSize(const IndexedBinarySpec& s) { return s.d1 * s.d2 * s.samples; }

Status WriteIndexedBinary(const std::string& path, const IndexedBinarySpec& s, const ContentSpec& content, AlignedBuffer* scratch) {
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  ContentSource rng(content);
  FEEDRATE_RETURN_IF_ERROR(file.WriteRandom(rng, IndexedBinaryFileSize(s), 0, scratch));
  std::vector<int64_t> offsets(s.samples), sizes(s.samples, static_cast<int64_t>(s.d1 * s.d2));
  for (uint64_t k = 0; k < s.samples; ++k) offsets[k] = static_cast<int64_t>(k * s.d1 * s.d2);
  auto as_text = [](const std::vector<int64_t>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));  // x86-64/aarch64: LE
  };
  FEEDRATE_RETURN_IF_ERROR(WriteDatasetFile(path + ".off.idx", as_text(offsets)));
  FEEDRATE_RETURN_IF_ERROR(WriteDatasetFile(path + ".sz.idx", as_text(sizes)));
  return file.Commit();  // the data file appears last, once its index is in place
}

}  // namespace feedrate
