// The ByteSource HDF5 driver: open/close, end of address/file, read; every write path refused.
#include "loader/format/hdf5_source_driver.h"

#include <H5FDpublic.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace feedrate {
namespace {

struct SourceFapl {
  const ByteSource* src;
};

struct SourceFile {
  H5FD_t pub;  // first: libhdf5 hands this back as H5FD_t*
  const ByteSource* src;
  haddr_t eoa;
};

thread_local std::string last_error;

void* FaplGet(H5FD_t* file) {
  auto* fa = static_cast<SourceFapl*>(std::malloc(sizeof(SourceFapl)));
  if (fa != nullptr) fa->src = reinterpret_cast<SourceFile*>(file)->src;
  return fa;
}
void* FaplCopy(const void* fapl) {
  auto* fa = static_cast<SourceFapl*>(std::malloc(sizeof(SourceFapl)));
  if (fa != nullptr) std::memcpy(fa, fapl, sizeof(SourceFapl));
  return fa;
}
herr_t FaplFree(void* fapl) {
  std::free(fapl);
  return 0;
}

H5FD_t* Open(const char* /*name*/, unsigned flags, hid_t fapl, haddr_t /*maxaddr*/) {
  if ((flags & (H5F_ACC_RDWR | H5F_ACC_CREAT | H5F_ACC_TRUNC)) != 0) return nullptr;  // read-only
  const auto* fa = static_cast<const SourceFapl*>(H5Pget_driver_info(fapl));
  if (fa == nullptr || fa->src == nullptr) return nullptr;
  auto* f = static_cast<SourceFile*>(std::calloc(1, sizeof(SourceFile)));
  if (f == nullptr) return nullptr;
  f->src = fa->src;
  return &f->pub;
}
herr_t Close(H5FD_t* file) {
  std::free(file);
  return 0;
}
int Compare(const H5FD_t* a, const H5FD_t* b) {
  const auto* x = reinterpret_cast<const SourceFile*>(a)->src;
  const auto* y = reinterpret_cast<const SourceFile*>(b)->src;
  return x < y ? -1 : x > y ? 1 : 0;
}
herr_t Query(const H5FD_t* /*file*/, unsigned long* flags) {
  // Metadata reads gathered into larger ones, raw data sieved: fewer, larger reads (ranged GETs).
  *flags = H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
  return 0;
}
haddr_t GetEoa(const H5FD_t* file, H5FD_mem_t /*type*/) { return reinterpret_cast<const SourceFile*>(file)->eoa; }
herr_t SetEoa(H5FD_t* file, H5FD_mem_t /*type*/, haddr_t addr) {
  reinterpret_cast<SourceFile*>(file)->eoa = addr;
  return 0;
}
haddr_t GetEof(const H5FD_t* file, H5FD_mem_t /*type*/) { return reinterpret_cast<const SourceFile*>(file)->src->size(); }
herr_t Read(H5FD_t* file, H5FD_mem_t /*type*/, hid_t /*dxpl*/, haddr_t addr, size_t size, void* buf) {
  const ByteSource& src = *reinterpret_cast<SourceFile*>(file)->src;
  // libhdf5 may ask past the end of the file (reading ahead); those bytes read as zeros, as the sec2 driver does.
  const uint64_t end = src.size();
  const size_t have = addr >= end ? 0 : static_cast<size_t>(std::min<uint64_t>(size, end - addr));
  if (have > 0) {
    Status st = src.ReadAt(buf, have, addr);
    if (!st.ok()) {
      last_error = st.ToString();
      return -1;
    }
  }
  if (have < size) std::memset(static_cast<char*>(buf) + have, 0, size - have);
  return 0;
}
herr_t Write(H5FD_t*, H5FD_mem_t, hid_t, haddr_t, size_t, const void*) { return -1; }

const H5FD_class_t kClass = {
    "feedrate_source",         // name
    (haddr_t{1} << 62) - 1,    // maxaddr
    H5F_CLOSE_WEAK,            // fc_degree
    nullptr,                   // terminate
    nullptr, nullptr, nullptr, // sb_size, sb_encode, sb_decode
    sizeof(SourceFapl), FaplGet, FaplCopy, FaplFree,
    0, nullptr, nullptr,       // dxpl
    Open, Close, Compare, Query,
    nullptr,                   // get_type_map
    nullptr, nullptr,          // alloc, free
    GetEoa, SetEoa, GetEof,
    nullptr,                   // get_handle
    Read, Write,
    nullptr, nullptr,          // flush, truncate
    nullptr, nullptr,          // lock, unlock
    H5FD_FLMAP_DICHOTOMY};

}  // namespace

hid_t MakeSourceFapl(const ByteSource& src) {
  static hid_t driver = -1;
  static std::once_flag once;
  std::call_once(once, [] { driver = H5FDregister(&kClass); });
  if (driver < 0) return -1;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return -1;
  SourceFapl info{&src};
  if (H5Pset_driver(fapl, driver, &info) < 0) {
    H5Pclose(fapl);
    return -1;
  }
  return fapl;
}

std::string LastSourceDriverError() { return last_error; }

}  // namespace feedrate
