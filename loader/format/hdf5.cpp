// libhdf5 access: handles wrapped in RAII, errors from the library's error stack turned into Status.
#include "loader/format/hdf5.h"

#include <hdf5.h>

#include <algorithm>
#include <mutex>

#include "loader/format/hdf5_source_driver.h"
#include "loader/format/sha256.h"

namespace feedrate {
namespace {

// Closes an HDF5 identifier with the matching H5*close.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    reset();
    id_ = std::exchange(o.id_, -1);
    close_ = o.close_;
    return *this;
  }
  ~Hid() { reset(); }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// The innermost message of the library's error stack (the library prints nothing: auto printing is off).
std::string H5Message() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD,
           [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
             if (n == 0 && e->desc != nullptr) *static_cast<std::string*>(data) = e->desc;
             return 0;
           },
           &msg);
  return msg.empty() ? "HDF5 library error" : msg;
}

void QuietLibrary() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

Result<Hid> OpenFile(const std::string& path, const ByteSource* src = nullptr) {
  QuietLibrary();
  if (src != nullptr) {  // through the ByteSource driver (an S3 object): `path` only names it
    Hid fapl(MakeSourceFapl(*src), H5Pclose);
    if (!fapl.ok()) return Status::IoError(path + ": cannot set up the HDF5 source driver: " + H5Message());
    Hid f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!f.ok()) {
      const std::string io = LastSourceDriverError();
      return Status::Corruption(path + ": cannot open as HDF5: " + (io.empty() ? H5Message() : io));
    }
    return f;
  }
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_sec2(fapl.get());
  H5Pset_file_locking(fapl.get(), false, true);  // NFS/Lustre without locks; read-only use
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    return Status::Corruption(path + ": not an HDF5 file, or unreadable (" + H5Message() + ")");
  }
  Hid f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!f.ok()) return Status::IoError(path + ": cannot open as HDF5: " + H5Message());
  return f;
}

Result<Hid> OpenDataset(const Hid& file, const std::string& path, const std::string& name) {
  Hid d(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) return Status::NotFound(path + ": no dataset '" + name + "' (" + H5Message() + ")");
  return d;
}

Result<std::string> NumpyDescr(hid_t type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  char kind;
  if (cls == H5T_INTEGER) {
    kind = H5Tget_sign(type) == H5T_SGN_NONE ? 'u' : 'i';
  } else if (cls == H5T_FLOAT) {
    kind = 'f';
  } else {
    return Status::Unsupported(where + ": datatype class " + std::to_string(static_cast<int>(cls)) +
                               " (only integer and float datasets are supported)");
  }
  char endian = size == 1 ? '|' : order == H5T_ORDER_BE ? '>' : '<';
  return std::string{endian, kind} + std::to_string(size);
}

// Reads the box [start, start+count) of dataset `d` in C order with memory type `type` (all of a scalar when
// start is empty).
herr_t ReadBox(const Hid& d, const Hid& type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, void* out) {
  if (start.empty()) return H5Dread(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
  Hid fspace(H5Dget_space(d.get()), H5Sclose);
  if (H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) return -1;
  Hid mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  return H5Dread(d.get(), type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, out);
}

struct Visit {
  std::vector<std::string> datasets;
};

herr_t OnLink(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  if (info->type != H5L_TYPE_HARD) return 0;
  H5O_info_t oi;
  if (H5Oget_info_by_name(group, name, &oi, H5P_DEFAULT) < 0) return -1;
  if (oi.type == H5O_TYPE_DATASET) static_cast<Visit*>(data)->datasets.push_back(std::string("/") + name);
  return 0;
}

Result<H5DatasetInfo> Describe(const Hid& file, const std::string& path, const std::string& name) {
  FEEDRATE_ASSIGN_OR_RETURN(auto d, OpenDataset(file, path, name));
  const std::string where = path + ": dataset " + name;
  H5DatasetInfo info;
  info.path = name;
  Hid type(H5Dget_type(d.get()), H5Tclose);
  FEEDRATE_ASSIGN_OR_RETURN(auto descr, NumpyDescr(type.get(), where));
  info.dtype = descr;
  info.itemsize = H5Tget_size(type.get());
  Hid space(H5Dget_space(d.get()), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return Status::Corruption(where + ": unreadable dataspace (" + H5Message() + ")");
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), maxd(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), maxd.data());
  for (int i = 0; i < rank; ++i) {
    info.shape.push_back(dims[static_cast<size_t>(i)]);
    info.maxshape.push_back(maxd[static_cast<size_t>(i)] == H5S_UNLIMITED ? -1 : static_cast<int64_t>(maxd[static_cast<size_t>(i)]));
  }
  Hid dcpl(H5Dget_create_plist(d.get()), H5Pclose);
  switch (H5Pget_layout(dcpl.get())) {
    case H5D_CONTIGUOUS: info.layout = "contiguous"; break;
    case H5D_CHUNKED: info.layout = "chunked"; break;
    case H5D_COMPACT: info.layout = "compact"; break;
    case H5D_VIRTUAL: info.layout = "virtual"; break;
    default: info.layout = "unknown";
  }
  if (info.layout == "chunked") {
    std::vector<hsize_t> c(static_cast<size_t>(rank));
    H5Pget_chunk(dcpl.get(), rank, c.data());
    info.chunks.assign(c.begin(), c.end());
    hsize_t n = 0;
    if (H5Dget_num_chunks(d.get(), space.get(), &n) >= 0) info.num_chunks = n;
  }
  const int nf = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nf; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 16;
    std::vector<unsigned> cd(16);
    char fname[128] = {};
    H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelmts, cd.data(), sizeof fname, fname, &config);
    cd.resize(std::min<size_t>(nelmts, cd.size()));
    info.filters.push_back({static_cast<int>(id), fname, cd});
  }
  if (info.layout == "contiguous") {
    haddr_t a = H5Dget_offset(d.get());
    if (a != HADDR_UNDEF) info.contiguous_offset = a;
  }
  info.storage_size = H5Dget_storage_size(d.get());
  return info;
}

}  // namespace

uint64_t H5DatasetInfo::nbytes() const {
  uint64_t n = itemsize;
  for (uint64_t s : shape) n *= s;
  return n;
}

Result<std::vector<H5DatasetInfo>> ListHdf5Datasets(const std::string& path, const ByteSource* src) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, OpenFile(path, src));
  Visit v;
  if (H5Lvisit(f.get(), H5_INDEX_NAME, H5_ITER_INC, OnLink, &v) < 0) {
    return Status::Corruption(path + ": cannot walk the HDF5 groups (" + H5Message() + ")");
  }
  std::vector<H5DatasetInfo> out;
  for (const auto& name : v.datasets) {
    FEEDRATE_ASSIGN_OR_RETURN(auto info, Describe(f, path, name));
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<H5Chunk>> ListHdf5Chunks(const std::string& path, const std::string& dataset, const ByteSource* src) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, OpenFile(path, src));
  FEEDRATE_ASSIGN_OR_RETURN(auto d, OpenDataset(f, path, dataset));
  Hid space(H5Dget_space(d.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  hsize_t n = 0;
  if (H5Dget_num_chunks(d.get(), space.get(), &n) < 0) {
    return Status::Unsupported(path + ": dataset " + dataset + " is not chunked (" + H5Message() + ")");
  }
  std::vector<H5Chunk> out;
  std::vector<hsize_t> coords(static_cast<size_t>(std::max(rank, 1)));
  for (hsize_t k = 0; k < n; ++k) {
    unsigned mask = 0;
    haddr_t addr = 0;
    hsize_t size = 0;
    // The 1.10 header warns fspace_id must be the dataset's own space (H5S_ALL is mishandled).
    if (H5Dget_chunk_info(d.get(), space.get(), k, coords.data(), &mask, &addr, &size) < 0) {
      return Status::Corruption(path + ": dataset " + dataset + ": chunk " + std::to_string(k) + " unreadable (" + H5Message() + ")");
    }
    out.push_back({std::vector<uint64_t>(coords.begin(), coords.begin() + rank), addr, size, mask});
  }
  return out;
}

Result<std::string> Hdf5DataSha256(const std::string& path, const std::string& dataset) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, OpenFile(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto d, OpenDataset(f, path, dataset));
  Hid dcpl(H5Dget_create_plist(d.get()), H5Pclose);
  for (int i = 0, nf = H5Pget_nfilters(dcpl.get()); i < nf; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 0;
    char fname[128] = {};
    H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelmts, nullptr, sizeof fname, fname, &config);
    if (H5Zfilter_avail(id) <= 0) {
      return Status::Unsupported(path + ": dataset " + dataset + " uses HDF5 filter " + std::to_string(id) +
                                 (fname[0] != '\0' ? std::string(" (") + fname + ")" : std::string()) +
                                 ", which this libhdf5 does not have (e.g. LZF needs the h5py plugin)");
    }
  }
  // Read with the stored datatype as memory type: no conversion, so the bytes keep the file's byte order. Large
  // datasets go through in blocks of whole first-axis rows (C order), so memory stays bounded.
  Hid type(H5Dget_type(d.get()), H5Tclose);
  Hid space(H5Dget_space(d.get()), H5Sclose);
  const size_t item = H5Tget_size(type.get());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  uint64_t row = item;  // bytes per first-axis row (the whole dataset for a scalar)
  for (int i = 1; i < rank; ++i) row *= dims[static_cast<size_t>(i)];
  const uint64_t rows = rank > 0 ? dims[0] : 1;
  constexpr uint64_t kBlockBytes = 64 << 20;
  const uint64_t per_block = std::max<uint64_t>(1, kBlockBytes / std::max<uint64_t>(row, 1));
  Sha256 hash;
  std::vector<char> buf;
  for (uint64_t r = 0; r < rows; r += per_block) {
    const uint64_t n = std::min(per_block, rows - r);
    buf.resize(n * row);
    if (buf.empty()) break;
    std::vector<hsize_t> start(dims.size(), 0), count = dims;
    if (rank > 0) {
      start[0] = r;
      count[0] = n;
    }
    if (ReadBox(d, type, start, count, buf.data()) < 0) {
      return Status::Corruption(path + ": dataset " + dataset + ": read failed (" + H5Message() + ")");
    }
    FEEDRATE_RETURN_IF_ERROR(hash.Update(buf.data(), buf.size()));
  }
  return hash.FinishHex();
}

Result<std::string> ReadHdf5Box(const std::string& path, const std::string& dataset, const std::vector<uint64_t>& start,
                                const std::vector<uint64_t>& count) {
  FEEDRATE_ASSIGN_OR_RETURN(auto f, OpenFile(path));
  FEEDRATE_ASSIGN_OR_RETURN(auto d, OpenDataset(f, path, dataset));
  Hid type(H5Dget_type(d.get()), H5Tclose);
  uint64_t bytes = H5Tget_size(type.get());
  for (uint64_t c : count) bytes *= c;
  std::string out(bytes, '\0');
  std::vector<hsize_t> s(start.begin(), start.end()), c(count.begin(), count.end());
  if (ReadBox(d, type, s, c, out.data()) < 0) {
    return Status::Corruption(path + ": dataset " + dataset + ": read failed (" + H5Message() + ")");
  }
  return out;
}

}  // namespace feedrate
