// JPEG (libjpeg-turbo) and PNG (libpng) samples decoded in memory, the work DLIO's PIL reader does per sample
// (np.asarray(Image.open(f))); used when a run asks for decode timing (feedrate.decode).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loader/io/aligned_buffer.h"
#include "loader/status.h"
#include "loader/util/choices.h"

namespace feedrate {

struct ImageSize {
  uint32_t width = 0, height = 0, channels = 0;
};

// "JPEG" or "PNG" by the file's first bytes (JPEG's SOI marker, PNG's 8-byte signature), else "unknown".
const char* ImageSignature(const char* data, size_t n);
// A file of `format` (jpeg, jpg or png) must carry its signature: Corruption "<path>: not a <format> file (<what it
// has> signature)" otherwise. Used where the file is indexed and, for files not opened at setup, once read.
Status CheckImageSignature(DataFormat format, const char* data, size_t n, std::string_view path);

// Width, height and channels from a JPEG's frame header (SOFn) or a PNG's IHDR, without decoding.
Result<ImageSize> ReadImageSize(const char* data, size_t n);

// The most pixels an image is decoded into: PIL's decompression-bomb error bound (2 x Image.MAX_IMAGE_PIXELS,
// 178,956,970), so a 5 MB PNG declaring 20000 x 20000 is refused before 1.2 GB of pixel memory, as DLIO's PIL does.
inline constexpr uint64_t kMaxImagePixels = 178956970;

// One per thread: keeps its libjpeg decompressor and its pixel buffer (grown to the largest image) across images.
class ImageDecoder {
 public:
  ImageDecoder();
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  // Decodes the whole image (format by signature) to its pixels; *pixel_bytes gets their size. Errors say what
  // the decoder reported; the caller adds the file.
  Status Decode(const char* data, size_t n, uint64_t* pixel_bytes);
  // A run's sample: Decode, its error as Corruption "<path>: image decode failed: <the decoder's message>".
  Status DecodeSample(const char* data, size_t n, std::string_view path);
  // The last decoded image's pixels, row by row (valid until the next Decode).
  const char* pixels() const { return pixels_.data(); }

 private:
  struct Jpeg;
  Status DecodeJpeg(const unsigned char* data, size_t n, uint64_t* pixel_bytes);
  Status DecodePng(const unsigned char* data, size_t n, uint64_t* pixel_bytes);
  std::unique_ptr<Jpeg> jpeg_;
  AlignedBuffer pixels_;
};

}  // namespace feedrate
