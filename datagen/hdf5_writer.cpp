// DLIO HDF5 writer through libhdf5: contiguous `records`, written row block by row block from one buffer.
#include "datagen/hdf5_writer.h"

#include <hdf5.h>

#include <algorithm>
#include <vector>

#include "datagen/temp_file.h"

namespace feedrate {
namespace {

struct H5Closer {
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5Closer() {
    if (id >= 0) close(id);
  }
};

}  // namespace

uint64_t DlioHdf5DataBytes(const Hdf5FileSpec& s) { return s.d1 * s.d2 * s.samples + 8 * s.samples; }

Status WriteDlioHdf5(const std::string& path, const Hdf5FileSpec& s, uint64_t content_seed, AlignedBuffer* scratch) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // libhdf5 writes the file through its own descriptor, opened at /proc/self/fd/N (the file this process created
  // O_EXCL, not whatever may be at its name by then); it cannot create over an unnamed (O_TMPFILE) file.
  FEEDRATE_ASSIGN_OR_RETURN(auto tmp, TempFile::CreateNamed(path));
  const std::string name = tmp.OpenPath();
  auto fail = [&](const std::string& what) { return Status::IoError(path + ": HDF5 " + what + " failed (disk full?)"); };
  {
    H5Closer fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
    H5Pset_alignment(fapl.id, 1, 4096);  // every object, raw data included, starts on a 4 KiB boundary
    H5Closer file{H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id), H5Fclose};
    if (file.id < 0) return fail("create");
    const hsize_t dims[3] = {s.samples, s.d1, s.d2};
    H5Closer space{H5Screate_simple(3, dims, nullptr), H5Sclose};
    H5Closer dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    H5Pset_layout(dcpl.id, H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl.id, H5D_ALLOC_TIME_EARLY);
    H5Closer records{H5Dcreate2(file.id, "records", H5T_STD_U8LE, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
    if (records.id < 0) return fail("create of dataset records");
    FastBytes rng(content_seed);
    // Row blocks of one sample that fit the buffer (a row is d2 bytes).
    const hsize_t rows_per_block = std::max<hsize_t>(1, std::min<hsize_t>(s.d1, scratch->size() / std::max<uint64_t>(s.d2, 1)));
    for (hsize_t k = 0; k < s.samples; ++k) {
      for (hsize_t r = 0; r < s.d1; r += rows_per_block) {
        const hsize_t n = std::min<hsize_t>(rows_per_block, s.d1 - r);
        const hsize_t start[3] = {k, r, 0}, count[3] = {1, n, s.d2};
        H5Closer fspace{H5Dget_space(records.id), H5Sclose};
        H5Sselect_hyperslab(fspace.id, H5S_SELECT_SET, start, nullptr, count, nullptr);
        H5Closer mspace{H5Screate_simple(3, count, nullptr), H5Sclose};
        rng.Fill(scratch->data(), n * s.d2);
        if (H5Dwrite(records.id, H5T_NATIVE_UINT8, mspace.id, fspace.id, H5P_DEFAULT, scratch->data()) < 0) {
          return fail("write of records");
        }
      }
    }
    const hsize_t ldims[1] = {s.samples};
    H5Closer lspace{H5Screate_simple(1, ldims, nullptr), H5Sclose};
    H5Closer labels{H5Dcreate2(file.id, "labels", H5T_STD_I64LE, lspace.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
    std::vector<int64_t> zeros(s.samples, 0);
    if (labels.id < 0 || H5Dwrite(labels.id, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()) < 0) {
      return fail("write of labels");
    }
    if (H5Fflush(file.id, H5F_SCOPE_GLOBAL) < 0) return fail("flush");
  }  // everything closed: the file is complete on disk
  return tmp.Commit();
}

}  // namespace feedrate
