// Inspection of JPEG/PNG samples: dimensions from the headers, and the decoded pixels' sha256.
#include <string>

#include "loader/format/image_decode.h"
#include "loader/format/inspect.h"
#include "loader/format/sha256.h"
#include "loader/io/unique_fd.h"

namespace feedrate {

Result<ImageReport> InspectImageFile(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, FileSize(fd.get(), path));
  std::string bytes(static_cast<size_t>(size), '\0');
  FEEDRATE_RETURN_IF_ERROR(PreadFull(fd.get(), bytes.data(), bytes.size(), 0, path));
  ImageReport r;
  r.path = path;
  r.size = size;
  auto dims = ReadImageSize(bytes.data(), bytes.size());
  if (!dims.ok()) return Status::Corruption(path + ": " + dims.status().message());
  r.width = dims->width;
  r.height = dims->height;
  r.channels = dims->channels;
  r.format = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0xFF ? "jpeg" : "png";
  ImageDecoder decoder;
  Status st = decoder.Decode(bytes.data(), bytes.size(), &r.pixel_bytes);
  if (!st.ok()) return Status::Corruption(path + ": " + st.message());
  Sha256 hash;
  FEEDRATE_RETURN_IF_ERROR(hash.Update(decoder.pixels(), r.pixel_bytes));
  FEEDRATE_ASSIGN_OR_RETURN(auto hex, hash.FinishHex());
  r.pixels_sha256 = hex;
  return r;
}

}  // namespace feedrate
