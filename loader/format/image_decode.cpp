// ImageDecoder: libjpeg's error exits become a longjmp back into DecodeJpeg (no C++ object lives across it);
// libpng's simplified API does the same internally.
#include "loader/format/image_decode.h"

#include <string_view>

#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>

namespace feedrate {

namespace {
constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

uint32_t Be16(const unsigned char* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Be32(const unsigned char* p) { return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]; }
}  // namespace

Result<ImageSize> ReadImageSize(const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  if (n >= 33 && std::memcmp(p, kPngSignature, 8) == 0 && std::memcmp(p + 12, "IHDR", 4) == 0) {
    static const uint32_t kChannels[7] = {1, 0, 3, 1, 2, 0, 4};  // by PNG colour type (3: palette)
    const unsigned type = p[25];
    if (type > 6 || kChannels[type] == 0) return Status::Corruption("PNG colour type " + std::to_string(type) + " is invalid");
    return ImageSize{Be32(p + 16), Be32(p + 20), kChannels[type]};
  }
  if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return Status::Corruption("neither a JPEG nor a PNG signature");
  // Walk the JPEG marker segments to the first frame header (SOF0-SOF15 but DHT C4, JPG C8, DAC CC).
  size_t i = 2;
  while (i + 4 <= n) {
    if (p[i] != 0xFF) return Status::Corruption("JPEG marker expected at byte " + std::to_string(i));
    const unsigned m = p[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) {  // no length
      i += 2;
      continue;
    }
    const uint32_t len = Be16(p + i + 2);
    if (len < 2) return Status::Corruption("JPEG segment length " + std::to_string(len) + " at byte " + std::to_string(i));
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      if (i + 10 > n) break;
      return ImageSize{Be16(p + i + 7), Be16(p + i + 5), p[i + 9]};
    }
    if (m == 0xDA || m == 0xD9) return Status::Corruption("JPEG has no frame header before its scan");
    i += 2 + len;
  }
  return Status::Corruption("JPEG ends before its frame header");
}

// The error manager first, so libjpeg's `err` pointer is also a pointer to the whole state.
struct ImageDecoder::Jpeg {
  jpeg_error_mgr mgr{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  jpeg_decompress_struct cinfo{};
};

namespace {

// libjpeg's fatal errors, and its warnings (corrupt or truncated data, which PIL's reader also refuses), end the
// decode: the message is kept and control jumps back to RunJpegDecode.
template <typename State>
[[noreturn]] void JpegFail(j_common_ptr c) {
  auto* st = reinterpret_cast<State*>(c->err);
  c->err->format_message(c, st->message);
  std::longjmp(st->jump, 1);
}
template <typename State>
void JpegMessage(j_common_ptr c, int level) {
  if (level < 0) JpegFail<State>(c);
}

// Only trivially destructible locals live here, so the longjmp skips no destructor.
template <typename State>
bool RunJpegDecode(State* st, const unsigned char* data, size_t n, AlignedBuffer* pixels, uint64_t* pixel_bytes) {
  jpeg_decompress_struct* c = &st->cinfo;
  if (setjmp(st->jump) != 0) {
    jpeg_abort_decompress(c);
    return false;
  }
  jpeg_mem_src(c, data, static_cast<unsigned long>(n));
  jpeg_read_header(c, TRUE);
  if (static_cast<uint64_t>(c->image_width) * c->image_height > kMaxImagePixels) {  // before any pixel memory
    std::snprintf(st->message, sizeof st->message, "%ux%u pixels, more than the %llu decoded at most (PIL's "
                  "decompression-bomb bound)", c->image_width, c->image_height, static_cast<unsigned long long>(kMaxImagePixels));
    jpeg_abort_decompress(c);
    return false;
  }
  jpeg_start_decompress(c);
  const size_t row = static_cast<size_t>(c->output_width) * static_cast<size_t>(c->output_components);
  const size_t bytes = row * c->output_height;
  if (pixels->size() < bytes) *pixels = AlignedBuffer(bytes);
  while (c->output_scanline < c->output_height) {
    JSAMPROW r = reinterpret_cast<JSAMPROW>(pixels->data() + row * c->output_scanline);
    jpeg_read_scanlines(c, &r, 1);
  }
  jpeg_finish_decompress(c);
  *pixel_bytes = bytes;
  return true;
}

}  // namespace

ImageDecoder::ImageDecoder() = default;

ImageDecoder::~ImageDecoder() {
  if (jpeg_) jpeg_destroy_decompress(&jpeg_->cinfo);
}

const char* ImageSignature(const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  if (n >= 8 && std::memcmp(p, kPngSignature, 8) == 0) return "PNG";
  if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return "JPEG";
  return "unknown";
}

Status CheckImageSignature(DataFormat format, const char* data, size_t n, std::string_view path) {
  const std::string has = ImageSignature(data, n);
  const bool ok = format == DataFormat::kPng ? has == "PNG" : has == "JPEG";
  return ok ? Status::Ok() : Status::Corruption(std::string(path) + ": not a " + Name(format) + " file (" + has + " signature)");
}

Status ImageDecoder::Decode(const char* data, size_t n, uint64_t* pixel_bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const std::string_view has = ImageSignature(data, n);
  if (has == "PNG") return DecodePng(p, n, pixel_bytes);
  if (has == "JPEG") return DecodeJpeg(p, n, pixel_bytes);
  return Status::Corruption("neither a JPEG nor a PNG signature");
}

Status ImageDecoder::DecodeSample(const char* data, size_t n, std::string_view path) {
  uint64_t pixels = 0;
  Status st = Decode(data, n, &pixels);
  if (!st.ok()) return Status::Corruption(std::string(path) + ": image decode failed: " + st.message());
  return Status::Ok();
}

Status ImageDecoder::DecodeJpeg(const unsigned char* data, size_t n, uint64_t* pixel_bytes) {
  if (!jpeg_) {
    jpeg_ = std::make_unique<Jpeg>();
    jpeg_->cinfo.err = jpeg_std_error(&jpeg_->mgr);
    jpeg_->mgr.error_exit = JpegFail<Jpeg>;
    jpeg_->mgr.emit_message = JpegMessage<Jpeg>;
    jpeg_create_decompress(&jpeg_->cinfo);
  }
  if (!RunJpegDecode(jpeg_.get(), data, n, &pixels_, pixel_bytes)) return Status::Corruption(std::string("JPEG: ") + jpeg_->message);
  return Status::Ok();
}

Status ImageDecoder::DecodePng(const unsigned char* data, size_t n, uint64_t* pixel_bytes) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_memory(&img, data, n) == 0) {
    return Status::Corruption(std::string("PNG: ") + img.message);
  }
  if (static_cast<uint64_t>(img.width) * img.height > kMaxImagePixels) {  // before any pixel memory
    png_image_free(&img);
    return Status::Corruption("PNG: " + std::to_string(img.width) + "x" + std::to_string(img.height) + " pixels, more than the " +
                              std::to_string(kMaxImagePixels) + " decoded at most (PIL's decompression-bomb bound)");
  }
  const size_t bytes = PNG_IMAGE_SIZE(img);  // in the image's own format (grayscale stays one channel)
  if (pixels_.size() < bytes) pixels_ = AlignedBuffer(bytes);
  if (png_image_finish_read(&img, nullptr, pixels_.data(), 0, nullptr) == 0) {
    std::string msg = std::string("PNG: ") + img.message;
    png_image_free(&img);
    return Status::Corruption(msg);
  }
  *pixel_bytes = bytes;
  return Status::Ok();
}

}  // namespace feedrate
