// JPEG writer: libjpeg compresses the noise rows into memory (jpeg_mem_dest), then one TempFile write.
#include "datagen/jpeg_writer.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <jpeglib.h>

#include "datagen/temp_file.h"
#include "loader/format/image_decode.h"
#include "loader/io/unique_fd.h"

namespace feedrate {
namespace {

struct JpegEncodeState {
  jpeg_error_mgr mgr{};  // first: libjpeg's `err` pointer is also a pointer to the whole state
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  jpeg_compress_struct cinfo{};
  unsigned char* out = nullptr;  // malloc'd by libjpeg's memory destination
  unsigned long out_size = 0;
};

[[noreturn]] void EncodeFail(j_common_ptr c) {
  auto* st = reinterpret_cast<JpegEncodeState*>(c->err);
  c->err->format_message(c, st->message);
  std::longjmp(st->jump, 1);
}

// Only trivially destructible locals live here, so the longjmp skips no destructor.
bool RunJpegEncode(JpegEncodeState* st, const unsigned char* pixels, uint32_t height, uint32_t width) {
  jpeg_compress_struct* c = &st->cinfo;
  if (setjmp(st->jump) != 0) return false;
  jpeg_mem_dest(c, &st->out, &st->out_size);
  c->image_width = width;
  c->image_height = height;
  c->input_components = 1;
  c->in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(c);
  jpeg_set_quality(c, 75, TRUE);  // PIL's default quality
  jpeg_start_compress(c, TRUE);
  while (c->next_scanline < c->image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + static_cast<size_t>(c->next_scanline) * width);
    jpeg_write_scanlines(c, &row, 1);
  }
  jpeg_finish_compress(c);
  return true;
}

}  // namespace

Status WriteJpeg(const std::string& path, uint64_t d1, uint64_t d2, uint64_t content_seed, AlignedBuffer* /*scratch*/) {
  if (d1 == 0 || d2 == 0 || d1 > 65535 || d2 > 65535) {
    return Status::InvalidArgument(path + ": a JPEG is at most 65535 x 65535 pixels, this one would be " + std::to_string(d1) +
                                   " x " + std::to_string(d2) + " (lower dataset.record_length_bytes)");
  }
  // DLIO draws randint(255): values 0..254.
  std::vector<unsigned char> pixels(d1 * d2);
  FastBytes rng(content_seed);
  rng.Fill(reinterpret_cast<char*>(pixels.data()), pixels.size());
  for (auto& v : pixels) v = static_cast<unsigned char>((v * 255u) >> 8);

  JpegEncodeState st;
  st.cinfo.err = jpeg_std_error(&st.mgr);
  st.mgr.error_exit = EncodeFail;
  jpeg_create_compress(&st.cinfo);
  const bool ok = RunJpegEncode(&st, pixels.data(), static_cast<uint32_t>(d1), static_cast<uint32_t>(d2));
  jpeg_destroy_compress(&st.cinfo);
  struct FreeOut {
    unsigned char* p;
    ~FreeOut() { std::free(p); }
  } free_out{st.out};
  if (!ok) return Status::IoError(path + ": JPEG encoding failed: " + st.message);
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  FEEDRATE_RETURN_IF_ERROR(file.WriteAt(st.out, st.out_size, 0));
  return file.Commit();
}

Status WriteRawImage(const std::string& path, uint64_t d1, uint64_t d2, const ContentSpec& content, AlignedBuffer* scratch) {
  FEEDRATE_ASSIGN_OR_RETURN(auto file, TempFile::Create(path));
  ContentSource bytes(content);
  FEEDRATE_RETURN_IF_ERROR(file.WriteRandom(bytes, d1 * d2, 0, scratch));
  return file.Commit();
}

bool JpegHasSize(const std::string& path, uint64_t d1, uint64_t d2) {
  auto fd = OpenForRead(path);
  if (!fd.ok()) return false;
  auto size = FileSize(fd->get(), path);
  if (!size.ok()) return false;
  std::vector<char> head(static_cast<size_t>(std::min<uint64_t>(*size, 64 << 10)));
  if (!PreadFull(fd->get(), head.data(), head.size(), 0, path).ok()) return false;
  auto dims = ReadImageSize(head.data(), head.size());
  // A complete file ends with the EOI marker (a file cut short by a crash does not).
  char tail[2] = {};
  if (!dims.ok() || *size < 2 || !PreadFull(fd->get(), tail, 2, *size - 2, path).ok()) return false;
  return dims->height == d1 && dims->width == d2 && static_cast<unsigned char>(tail[0]) == 0xFF &&
         static_cast<unsigned char>(tail[1]) == 0xD9;
}

}  // namespace feedrate
