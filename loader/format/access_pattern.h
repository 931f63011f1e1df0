// DLIO's per-sample access pattern as data: the read(2) calls each DLIO reader makes for one sample (after its open
// and fstat, before its close), derived from the readers' Python stacks and checked against strace of DLIO
// e1919d7 (docs/dlio-compatibility.md, "Requests per sample"). The engines replay them (feedrate.access_pattern).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loader/io/io_engine.h"
#include "loader/util/choices.h"

namespace feedrate {

// Which reader's calls a file's samples follow.
enum class AccessKind : uint8_t {
  kNone,   // no DLIO pattern (the engine reads the extent as coalesced transfers)
  kNpz,    // np.load(f, allow_pickle=True)['x']: CPython's BufferedReader + zipfile + numpy.lib.format
  kNpy,    // np.load(f): numpy reads the header through the buffer, then the array with one readinto
  kHdf5,   // h5py.File(f, 'r')['records'][i]: superblock and object-header reads, then the row
  kJpeg,   // np.asarray(PIL.Image.open(f)): one buffer fill, then 64 KiB reads to end of file
  kPng,    // np.asarray(PIL.Image.open(f)): the chunks before IDAT through the buffer, each IDAT in <= 64 KiB reads
  kIndexedBinary,  // open(f, 'rb'); seek(offset); readinto(sample): one block, or one read of the sample if larger
  kTfRecord,  // tf.data.TFRecordDataset: each file one stream of buffer_size preads from 0 (derived from TF's source)
  kReadAll,  // open(f, 'rb').read(): one read of the file's size + 1 and the read that meets EOF, no parsing
               // (MLPerf Storage v3.0's DLIO f16fe43 on local npz, npy, HDF5, JPEG and PNG: every sample)
};
std::string_view Name(AccessKind k);

// The facts of one file the calls depend on, learnt when the file is indexed at setup.
struct FileLayout {
  uint64_t size = 0;           // the file's size
  uint64_t dir_offset = 0;     // npz: the zip central directory
  uint64_t member_offset = 0;  // npz: the x.npy member's local header
  uint64_t member_data = 0;    // npz: the member's first byte (its .npy stream)
  uint64_t member_size = 0;    // npz: the member's stored size
  uint64_t npy_header = 0;     // npz/npy: bytes of the .npy header (magic + length + dict), where the array starts
};

// Appends to `out` (cleared first) the reads DLIO's reader of `kind` makes for sample extent `e` of a file with
// `layout`, in order, one after another; `block` is the file's st_blksize (Python's buffer size; 8192 when the file
// system says 0 or 1). kTfRecord: `block` is TensorFlow's buffer_size (0: unbuffered), `e` the framed record, and its
// reads are the stream's fills charged to that record (a file's records are read in order, one stream per file).
// Appends nothing for kNone. Reserve MaxDlioReads first and nothing is allocated.
void PlanDlioReads(AccessKind kind, const FileLayout& layout, const SampleExtent& e, uint64_t block,
                   std::vector<AccessRead>* out);
// TensorFlow's stream of one file as its records are asked for: the fills from `*next` (the stream's next fill
// offset, 0 at the file's open) until record `e` is in the buffer, and at the file's end the fills that meet it
// (`*next` then kStreamEnded, io_engine.h: nothing more is read). A record already in the buffer reads nothing. Clears `out`.
void PlanTfRecordStream(const SampleExtent& e, uint64_t size, uint64_t buffer, uint64_t* next, std::vector<AccessRead>* out);
// The most reads PlanDlioReads appends for a sample of at most `max_bytes` (and a file of at most `max_file`).
uint64_t MaxDlioReads(AccessKind kind, uint64_t max_bytes, uint64_t max_file, uint64_t block);

// The pattern Feedrate replays for a format read by `edition`'s DLIO: kNone where none is built (Parquet, csv).
AccessKind DlioAccessKind(DataFormat format, DlioEdition edition);
// Whether `edition`'s DLIO reads each sample of `format` as its whole file (kWholeFile): nothing in the file needs
// knowing before the sample's own reads.
bool ReadsWholeFiles(DataFormat format, DlioEdition edition);

}  // namespace feedrate
