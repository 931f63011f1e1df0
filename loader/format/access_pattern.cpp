// The read(2) calls of DLIO's readers, emulated layer by layer from the Python they run: CPython's BufferedReader
// (Modules/_io/bufferedio.c), zipfile's ZipExtFile and _SharedFile, numpy.lib.format.read_array, glibc's fread (numpy's
// fromfile), h5py/libhdf5's metadata reads and PIL's ImageFile.load. strace of DLIO e1919d7 checks each sequence
// (tests/unit/access_pattern_test.cpp holds the measured ones).
#include "loader/format/access_pattern.h"

#include <algorithm>

#include "loader/util/dlio_edition.h"

namespace feedrate {
namespace {

// CPython's io.BufferedReader over a FileIO: which read(2) calls read(n), seek and read() make.
class PyBufferedFile {
 public:
  PyBufferedFile(uint64_t size, uint64_t block, std::vector<AccessRead>* out) : size_(size), block_(block), out_(out) {}

  uint64_t Tell() const { return pos_; }
  // seek(target, 0): free inside the buffer while it has unread bytes (bufferedio.c's fast path), else lseek and
  // the buffer is dropped.
  void Seek(uint64_t target) {
    const bool fast = pos_ < buf_end_ && target >= buf_begin_ && target <= buf_end_;
    if (!fast) buf_begin_ = buf_end_ = target;
    pos_ = target;
  }
  // seek(off, 2): always lseek.
  void SeekEnd(uint64_t back) {
    pos_ = size_ >= back ? size_ - back : 0;
    buf_begin_ = buf_end_ = pos_;
  }

  // read(n), n > 0: the buffer's bytes, then direct reads of whole blocks, then one block to fill the buffer.
  uint64_t Read(uint64_t n) {
    const uint64_t avail = pos_ >= buf_begin_ && pos_ < buf_end_ ? buf_end_ - pos_ : 0;
    if (n <= avail) {
      pos_ += n;
      return n;
    }
    uint64_t got = avail, remaining = n - avail;
    pos_ += avail;
    buf_begin_ = buf_end_ = pos_;
    while (remaining > 0) {
      if (remaining > block_) {
        const uint64_t r = Raw(pos_, remaining - remaining % block_);
        pos_ += r;
        buf_begin_ = buf_end_ = pos_;
        if (r == 0) break;
        got += r;
        remaining -= r;
      } else {
        const uint64_t r = Raw(pos_, block_);
        buf_begin_ = pos_;
        buf_end_ = pos_ + r;
        if (r == 0) break;
        const uint64_t take = std::min(r, remaining);
        pos_ += take;
        got += take;
        remaining -= take;
        if (r < block_) break;  // end of file
      }
    }
    return got;
  }
  // readinto(n) at a fresh position: n bytes straight into the caller's array when larger than a block, else one
  // block into the buffer (bufferedio.c's _bufferedreader_readinto_generic).
  void ReadInto(uint64_t n) {
    if (n > block_) {
      pos_ += Raw(pos_, n);
      buf_begin_ = buf_end_ = pos_;
    } else {
      Read(n);
    }
  }
  // read(): FileIO.readall after the buffer: fstat, read(size - pos + 1), then read(1) meeting end of file.
  void ReadAll() {
    const uint64_t first = size_ >= pos_ ? size_ - pos_ + 1 : 1;
    const uint64_t r = Raw(pos_, first);
    pos_ += r;
    if (r < first) Raw(pos_, first - r);
    buf_begin_ = buf_end_ = pos_;
  }

 private:
  uint64_t Raw(uint64_t off, uint64_t len) {
    out_->push_back({off, len});
    return off >= size_ ? 0 : std::min(len, size_ - off);
  }
  uint64_t size_, block_;
  std::vector<AccessRead>* out_;
  uint64_t pos_ = 0, buf_begin_ = 0, buf_end_ = 0;
};

// zipfile.ZipExtFile over a stored member: reads of at least MIN_READ_SIZE (4096) through a _SharedFile, which
// seeks the shared BufferedReader to its own position before each.
class ZipStoredMember {
 public:
  ZipStoredMember(PyBufferedFile& f, uint64_t data_pos, uint64_t size) : f_(f), pos_(data_pos), left_(size) {}
  void Read(uint64_t n) {
    if (n <= buffered_) {
      buffered_ -= n;
      return;
    }
    n -= buffered_;
    buffered_ = 0;
    while (n > 0 && left_ > 0) {
      const uint64_t want = std::min(std::max<uint64_t>(n, 4096), left_);  // _read2: MIN_READ_SIZE, compress_left
      f_.Seek(pos_);
      const uint64_t got = f_.Read(want);
      pos_ += got;
      left_ -= got;
      if (got == 0) break;
      if (got > n) {
        buffered_ = got - n;
        n = 0;
      } else {
        n -= got;
      }
    }
  }

 private:
  PyBufferedFile& f_;
  uint64_t pos_, left_, buffered_ = 0;
};

constexpr uint64_t kNumpyBuffer = 1 << 18;  // numpy.lib.format.BUFFER_SIZE: read_array's chunk from a non-file
constexpr uint64_t kPilBlock = 1 << 16;     // PIL ImageFile.load's decodermaxblock

// zipfile.ZipFile(fid).open('x.npy'): the local header, then the name and extra field (from the buffer).
ZipStoredMember OpenMember(PyBufferedFile& f, const FileLayout& l) {
  f.Seek(l.member_offset);
  f.Read(30);
  if (l.member_data > l.member_offset + 30) f.Read(l.member_data - l.member_offset - 30);
  return ZipStoredMember(f, l.member_data, l.member_size);
}

// np.load(f, allow_pickle=True)['x'] on an npz whose x.npy member is stored.
void PlanNpz(const FileLayout& l, uint64_t block, std::vector<AccessRead>* out) {
  PyBufferedFile f(l.size, block, out);
  f.Read(6);  // np.load: the magic (len(MAGIC_PREFIX)), then seek(-6, 1)
  f.Seek(0);
  f.SeekEnd(0);  // zipfile._EndRecData: seek(0, 2), seek(-22, 2), read()
  f.SeekEnd(22);
  f.ReadAll();
  f.SeekEnd(22 + 20);  // _EndRecData64: seek(-42, 2), read(20)
  f.Read(20);
  f.Seek(l.dir_offset);  // _RealGetContents: the central directory
  f.Read(l.size - 22 > l.dir_offset ? l.size - 22 - l.dir_offset : 1);
  OpenMember(f, l).Read(6);  // NpzFile.__getitem__: open, read the magic, close ...
  ZipStoredMember m = OpenMember(f, l);  // ... and open again for read_array
  m.Read(8);  // read_magic: MAGIC_LEN
  if (l.npy_header > 10) {
    m.Read(2);  // version 1.0's header length, then the header dict
    m.Read(l.npy_header - 10);
  }
  const uint64_t data = l.member_size > l.npy_header ? l.member_size - l.npy_header : 0;
  for (uint64_t done = 0; done < data;) {  // read_array from a non-file object: BUFFER_SIZE chunks
    const uint64_t chunk = std::min(kNumpyBuffer, data - done);
    m.Read(chunk);
    done += chunk;
  }
}

// np.load(f) on an .npy: the magic and header through the buffer, then numpy.fromfile on a dup of the descriptor
// (glibc's stdio: the header's bytes, then a block, whole blocks directly, one block for the tail).
void PlanNpy(const FileLayout& l, uint64_t block, std::vector<AccessRead>* out) {
  PyBufferedFile f(l.size, block, out);
  f.Read(6);
  const uint64_t h = l.npy_header, end = l.size;
  if (h > 0) out->push_back({0, h});  // fdopen + fseek to the header's end: glibc reads up to it
  const uint64_t first = h / block * block;
  out->push_back({first, block});
  uint64_t pos = first + block;
  if (end >= pos + block) {
    const uint64_t direct = (end - pos) / block * block;
    out->push_back({pos, direct});
    pos += direct;
  }
  if (pos < end) out->push_back({pos, block});
}

// h5py.File(f, 'r')[...][i] on a contiguous dataset: the superblock (8, 16 and 32 bytes), the root group's and the
// dataset's object headers (512 bytes each, at the offsets DLIO's h5py-written files have), then the row.
void PlanHdf5(const SampleExtent& e, std::vector<AccessRead>* out) {
  out->push_back({0, 8});
  out->push_back({0, 16});
  out->push_back({16, 32});
  out->push_back({48, 512});
  out->push_back({195, 512});
  out->push_back({e.offset, e.length});
}

// np.asarray(Image.open(f)): the header through one buffer fill, then ImageFile.load from the start in 64 KiB reads
// until one comes back short (BufferedReader: whole blocks directly, so one more read meets the end).
void PlanJpeg(const FileLayout& l, uint64_t block, std::vector<AccessRead>* out) {
  PyBufferedFile f(l.size, block, out);
  f.Read(16);
  f.Seek(0);
  while (f.Read(kPilBlock) == kPilBlock) {
  }
}

// PIL's PngImagePlugin over the chunk layout PIL writes (IHDR, IDAT chunks of 64 KiB but the last, IEND), which the
// file's size alone then fixes; Feedrate's writer uses the same layout. Image.open's prefix, _open's signature, IHDR
// and its CRC, the first IDAT header; ImageFile.load's seek to the data and load_read's min(64 KiB, chunk left)
// reads, each further chunk after its CRC and header; load_end's CRC and the IEND header.
void PlanPng(const FileLayout& l, uint64_t block, std::vector<AccessRead>* out) {
  constexpr uint64_t kHead = 8 + 25, kTail = 12, kChunk = kPilBlock;
  PyBufferedFile f(l.size, block, out);
  f.Read(16);
  f.Seek(0);
  f.Read(8);
  f.Read(8);
  f.Read(13);
  f.Read(4);
  f.Read(8);
  f.Seek(kHead + 8);
  const uint64_t body = l.size > kHead + kTail ? l.size - kHead - kTail : 0;  // IDAT chunks, 12 bytes of frame each
  const uint64_t chunks = std::max<uint64_t>(1, (body + kChunk + 11) / (kChunk + 12));
  uint64_t data = body > 12 * chunks ? body - 12 * chunks : 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    if (c > 0) {
      f.Read(4);
      f.Read(8);
    }
    const uint64_t len = std::min(data, kChunk);  // load_read: min(decodermaxblock, what is left of the chunk)
    if (len > 0) f.Read(len);
    data -= len;
  }
  f.Read(4);
  f.Read(8);
}

// DLIO's IndexedBinaryReader.get_sample: seek to the sample's offset (from the .off.idx it read at start-up) and
// readinto an array of its size.
void PlanIndexedBinary(const SampleExtent& e, uint64_t size, uint64_t block, std::vector<AccessRead>* out) {
  PyBufferedFile f(size, block, out);
  f.Seek(e.offset);
  f.ReadInto(e.length);
}

// TensorFlow's TFRecordDataset (DLIO reader/tf_reader.py: buffer_size = transfer_size): a SequentialRecordReader over
// a BufferedInputStream over a RandomAccessInputStream (tensorflow/core/lib/io/record_reader.cc,
// buffered_inputstream.cc, random_inputstream.cc). The buffer is filled with pread(buffer) calls from offset 0, one
// after another, whatever the record boundaries; PosixRandomAccessFile::Read loops until it has the buffer or a
// pread returns 0, so the short fill at the end of the file is followed by one that returns nothing, and the header
// read after the last record fills once more at the end (nothing: end of file). Record [b, e) is charged the fills
// that start inside it (the first record also the one at 0); the last record, the fills at the end.
// buffer 0 (unbuffered): the header's 12 bytes, then payload and footer, in one pread each.
void PlanTfRecord(const SampleExtent& e, uint64_t size, uint64_t buffer, std::vector<AccessRead>* out) {
  uint64_t next = buffer == 0 ? e.offset : (e.offset + buffer - 1) / buffer * buffer;
  PlanTfRecordStream(e, size, buffer, &next, out);
}

}  // namespace

std::string_view Name(AccessKind k) {
  switch (k) {
    case AccessKind::kNone: return "none";
    case AccessKind::kNpz: return "npz (numpy np.load through zipfile)";
    case AccessKind::kNpy: return "npy (numpy np.load)";
    case AccessKind::kHdf5: return "hdf5 (h5py)";
    case AccessKind::kJpeg: return "jpeg (PIL Image.open + load)";
    case AccessKind::kPng: return "png (PIL Image.open + load)";
    case AccessKind::kIndexedBinary: return "indexed_binary (seek + readinto)";
    case AccessKind::kTfRecord: return "tfrecord (TensorFlow TFRecordDataset, buffered stream per file)";
    case AccessKind::kReadAll: return "whole file (open(f, 'rb').read(), DLIO f16fe43)";
  }
  return "?";
}

bool ReadsWholeFiles(DataFormat format, DlioEdition edition) {
  const bool reader = format == DataFormat::kNpz || format == DataFormat::kNpy || format == DataFormat::kHdf5 || IsImage(format);
  return reader && Traits(edition).whole_file_reads;
}

AccessKind DlioAccessKind(DataFormat format, DlioEdition edition) {
  if (ReadsWholeFiles(format, edition)) return AccessKind::kReadAll;
  switch (format) {
    case DataFormat::kNpz: return AccessKind::kNpz;
    case DataFormat::kNpy: return AccessKind::kNpy;
    case DataFormat::kHdf5: return AccessKind::kHdf5;
    case DataFormat::kJpeg: return AccessKind::kJpeg;
    case DataFormat::kPng: return AccessKind::kPng;
    case DataFormat::kIndexedBinary: return AccessKind::kIndexedBinary;
    case DataFormat::kTfRecord: return AccessKind::kTfRecord;
    default: return AccessKind::kNone;
  }
}

void PlanDlioReads(AccessKind kind, const FileLayout& layout, const SampleExtent& e, uint64_t block,
                   std::vector<AccessRead>* out) {
  out->clear();
  if (kind == AccessKind::kTfRecord) return PlanTfRecord(e, layout.size, block, out);  // block: TF's buffer_size
  if (block <= 1) block = 8192;  // io.DEFAULT_BUFFER_SIZE when st_blksize says nothing
  switch (kind) {
    case AccessKind::kNpz: return PlanNpz(layout, block, out);
    case AccessKind::kNpy: return PlanNpy(layout, block, out);
    case AccessKind::kHdf5: return PlanHdf5(e, out);
    case AccessKind::kJpeg: return PlanJpeg(layout, block, out);
    case AccessKind::kPng: return PlanPng(layout, block, out);
    case AccessKind::kIndexedBinary: return PlanIndexedBinary(e, layout.size, block, out);
    case AccessKind::kReadAll: return PyBufferedFile(layout.size, block, out).ReadAll();
    case AccessKind::kTfRecord:
    case AccessKind::kNone: return;
  }
}

void PlanTfRecordStream(const SampleExtent& e, uint64_t size, uint64_t buffer, uint64_t* next, std::vector<AccessRead>* out) {
  out->clear();
  const uint64_t end = e.offset + e.length;
  if (*next == kStreamEnded) return;
  if (buffer == 0) {  // unbuffered: the header's 12 bytes, then payload and footer, one pread each
    out->push_back({e.offset, 12});
    if (e.length > 12) out->push_back({e.offset + 12, e.length - 12});
    *next = end;
    if (end >= size) {
      out->push_back({size, 12});
      *next = kStreamEnded;
    }
    return;
  }
  for (; *next < end && *next < size; *next += buffer) {
    out->push_back({*next, buffer});
    if (size - *next < buffer) out->push_back({size, buffer - (size - *next)});  // the loop's pread that returns 0
  }
  if (end >= size) {
    out->push_back({size, buffer});  // the next header's fill: end of file
    *next = kStreamEnded;
  }
}

uint64_t MaxDlioReads(AccessKind kind, uint64_t max_bytes, uint64_t max_file, uint64_t block) {
  if (kind == AccessKind::kTfRecord) return 4 + (block == 0 ? 0 : max_bytes / block);
  if (block <= 1) block = 8192;
  if (max_bytes == kWholeFile) max_bytes = 0;  // a whole file of unknown size: max_file bounds it
  switch (kind) {
    case AccessKind::kNpz: return 16 + 3 * (max_file / kNumpyBuffer + 1);
    case AccessKind::kNpy: return 6;
    case AccessKind::kHdf5: return 6;
    case AccessKind::kJpeg: return 4 + std::max(max_bytes, max_file) / kPilBlock;
    case AccessKind::kPng: return 6 + 3 * (std::max(max_bytes, max_file) / kPilBlock + 1);
    case AccessKind::kIndexedBinary: return 1;
    case AccessKind::kReadAll: return 2;
    case AccessKind::kTfRecord:
    case AccessKind::kNone: return 0;
  }
  return 0;
}

}  // namespace feedrate
