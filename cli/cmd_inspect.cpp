// `feedrate inspect`: arrays of .npy/.npz files with offsets and sha256 of stored data; TFRecord records with
// offsets, lengths, CRCs and payload features. The format comes from the content.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loader/util/exit_codes.h"
#include "loader/format/hdf5.h"
#include "loader/format/inspect.h"
#include "loader/io/unique_fd.h"
#include "loader/s3/s3_dataset.h"

namespace feedrate::cli {
namespace {

nlohmann::json ToJson(const FileReport& r) {
  nlohmann::json arrays = nlohmann::json::array();
  for (const auto& ar : r.arrays) {
    const NpArray& a = ar.array;
    nlohmann::json j = {{"name", a.name},
                        {"dtype_descr", a.header.descr},
                        {"shape", a.header.shape},
                        {"fortran_order", a.header.fortran_order},
                        {"itemsize", a.header.itemsize},
                        {"nbytes", a.header.nbytes},
                        {"npy_version", std::to_string(a.header.major) + "." + std::to_string(a.header.minor)},
                        {"header_len", a.header.header_len},
                        {"data_offset_in_npy", a.header.data_offset},
                        {"data_offset", a.data_offset_in_file ? nlohmann::json(*a.data_offset_in_file) : nlohmann::json()},
                        {"sha256_stored", ar.sha256}};
    if (a.member) {
      j["zip_member"] = {{"name", a.member->name},
                         {"method", a.member->method == 0 ? "stored" : a.member->method == 8 ? "deflated" : "other"},
                         {"compressed_size", a.member->compressed_size},
                         {"uncompressed_size", a.member->uncompressed_size},
                         {"crc32", a.member->crc32},
                         {"local_header_offset", a.member->local_header_offset},
                         {"data_offset", a.member->data_offset}};
    }
    arrays.push_back(j);
  }
  return {{"file", r.path}, {"format", r.kind}, {"size_bytes", r.size}, {"arrays", arrays}};
}

// inspect --decode: per leaf column, what decoding every page gave.
nlohmann::json DecodedJson(const ParquetReport& r) {
  nlohmann::json cols = nlohmann::json::array();
  for (size_t k = 0; k < r.decoded.size(); ++k) {
    const PqChunkStats& d = r.decoded[k];
    cols.push_back({{"path", r.meta.row_groups.empty() ? "" : r.meta.row_groups[0].columns[k].path},
                    {"values", d.values - d.nulls}, {"nulls", d.nulls}, {"decoded_bytes", d.decoded_bytes},
                    {"sum", d.has_sum ? nlohmann::json(d.sum) : nlohmann::json(nullptr)}});
  }
  return {{"seconds", r.decode_seconds}, {"columns", cols}};
}

nlohmann::json ToJson(const ParquetReport& r) {
  const PqFileMetaData& m = r.meta;
  nlohmann::json schema = nlohmann::json::array();
  for (const auto& e : m.schema) {
    nlohmann::json j = {{"name", e.name}, {"type", PqTypeName(e.type)}, {"repetition", e.repetition},
                        {"num_children", e.num_children}};
    if (e.type_length > 0) j["type_length"] = e.type_length;
    if (e.converted_type >= 0) j["converted_type"] = e.converted_type;
    if (e.logical_type >= 0) j["logical_type"] = e.logical_type;
    schema.push_back(j);
  }
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : m.TopFields()) fields.push_back({{"name", f.name}, {"first_leaf", f.first_leaf}, {"leaves", f.leaves}});
  nlohmann::json groups = nlohmann::json::array();
  uint64_t compressed = 0, uncompressed = 0, pages = 0;
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    nlohmann::json cols = nlohmann::json::array();
    for (size_t c = 0; c < m.row_groups[g].columns.size(); ++c) {
      const PqColumnChunk& k = m.row_groups[g].columns[c];
      const ParquetChunkPages& p = r.pages[g][c];
      nlohmann::json enc = nlohmann::json::array();
      for (int32_t e : k.encodings) enc.push_back(PqEncodingName(e));
      cols.push_back({{"path", k.path}, {"type", PqTypeName(k.type)}, {"codec", PqCodecName(k.codec)}, {"encodings", enc},
                      {"num_values", k.num_values}, {"data_page_offset", k.data_page_offset},
                      {"dictionary_page_offset", k.dictionary_page_offset}, {"start", k.start()},
                      {"total_compressed_size", k.total_compressed_size}, {"total_uncompressed_size", k.total_uncompressed_size},
                      {"data_pages", p.data_pages}, {"dictionary_pages", p.dictionary_pages}});
      compressed += static_cast<uint64_t>(k.total_compressed_size);
      uncompressed += static_cast<uint64_t>(k.total_uncompressed_size);
      pages += p.data_pages + p.dictionary_pages + p.other_pages;
    }
    groups.push_back({{"num_rows", m.row_groups[g].num_rows}, {"total_byte_size", m.row_groups[g].total_byte_size},
                      {"columns", cols}});
  }
  nlohmann::json j = {{"file", r.path}, {"format", "parquet"}, {"size_bytes", r.size}, {"version", m.version},
                      {"created_by", m.created_by}, {"num_rows", m.num_rows}, {"footer_bytes", m.footer_length},
                      {"schema", schema}, {"fields", fields}, {"row_groups", groups},
                      {"totals", {{"compressed_bytes", compressed}, {"uncompressed_bytes", uncompressed}, {"pages", pages}}}};
  if (!r.decoded.empty()) j["decoded"] = DecodedJson(r);
  return j;
}

void PrintText(const ParquetReport& r, const std::string& name) {
  const nlohmann::json j = ToJson(r);
  std::printf("%s: parquet, %llu bytes, %lld rows, %zu row group(s), %zu column(s), created by %s\n", name.c_str(),
              static_cast<unsigned long long>(r.size), static_cast<long long>(r.meta.num_rows), r.meta.row_groups.size(),
              r.meta.TopFields().size(), r.meta.created_by.empty() ? "(unknown)" : r.meta.created_by.c_str());
  for (size_t g = 0; g < r.meta.row_groups.size(); ++g) {
    std::printf("  row group %zu: %lld rows\n", g, static_cast<long long>(r.meta.row_groups[g].num_rows));
    for (const auto& c : j["row_groups"][g]["columns"]) {
      std::printf("    %-32s %-20s %-12s offset=%-12lld compressed=%-11lld uncompressed=%-11lld pages=%llu\n",
                  c["path"].get<std::string>().c_str(), c["type"].get<std::string>().c_str(),
                  c["codec"].get<std::string>().c_str(), static_cast<long long>(c["start"].get<int64_t>()),
                  static_cast<long long>(c["total_compressed_size"].get<int64_t>()),
                  static_cast<long long>(c["total_uncompressed_size"].get<int64_t>()),
                  static_cast<unsigned long long>(c["data_pages"].get<uint64_t>() + c["dictionary_pages"].get<uint64_t>()));
    }
  }
  if (!r.decoded.empty()) {
    std::printf("  decoded in %.3f s:\n", r.decode_seconds);
    for (const auto& c : j["decoded"]["columns"]) {
      std::printf("    %-32s values=%-12llu nulls=%-10llu bytes=%-12llu sum=%s\n", c["path"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(c["values"].get<uint64_t>()),
                  static_cast<unsigned long long>(c["nulls"].get<uint64_t>()),
                  static_cast<unsigned long long>(c["decoded_bytes"].get<uint64_t>()), c["sum"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
  }
  std::printf("  totals: %llu bytes compressed, %llu uncompressed, %llu pages\n",
              static_cast<unsigned long long>(j["totals"]["compressed_bytes"].get<uint64_t>()),
              static_cast<unsigned long long>(j["totals"]["uncompressed_bytes"].get<uint64_t>()),
              static_cast<unsigned long long>(j["totals"]["pages"].get<uint64_t>()));
}

nlohmann::json FeaturesJson(const std::vector<FeatureSummary>& fs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : fs) j[f.key] = {{"kind", f.kind}, {"count", f.count}};
  return j;
}

nlohmann::json ToJson(const TfRecordReport& r) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& rec : r.records) {
    nlohmann::json j = {{"offset", rec.entry.offset},
                        {"length", rec.entry.length},
                        {"payload_crc", rec.payload_crc},
                        {"payload_sha256", rec.payload_sha256},
                        {"type", rec.payload.type}};
    if (rec.payload.type == "Example") j["features"] = FeaturesJson(rec.payload.features);
    if (rec.payload.type == "SequenceExample") {
      j["context"] = FeaturesJson(rec.payload.features);
      nlohmann::json lists = nlohmann::json::object();
      for (const auto& l : rec.payload.feature_lists) lists[l.key] = {{"num_steps", l.num_steps}, {"kind", l.kind}};
      j["feature_lists"] = lists;
    }
    records.push_back(std::move(j));
  }
  return {{"file", r.path},
          {"format", "tfrecord"},
          {"size_bytes", r.size},
          {"num_records", r.records.size()},
          {"crc", "ok"},
          {"payload_type", r.payload_type},
          {"records", records}};
}

void PrintText(const TfRecordReport& r) {
  std::printf("%s: tfrecord, %llu bytes, %zu record(s), all CRCs ok, payload %s\n", r.path.c_str(),
              static_cast<unsigned long long>(r.size), r.records.size(), r.payload_type.c_str());
  for (size_t k = 0; k < r.records.size(); ++k) {
    const auto& rec = r.records[k];
    std::string what = rec.payload.type;
    for (const auto& f : rec.payload.features) what += " " + f.key + ":" + f.kind + "[" + std::to_string(f.count) + "]";
    for (const auto& l : rec.payload.feature_lists) what += " " + l.key + ":" + std::to_string(l.num_steps) + " steps";
    std::printf("  #%-6zu offset=%-10llu length=%-9llu %s\n", k, static_cast<unsigned long long>(rec.entry.offset),
                static_cast<unsigned long long>(rec.entry.length), what.c_str());
  }
}

// Every dataset of an HDF5 file with a sha256 of its data (C order, stored byte order); the first error ends it.
Result<nlohmann::json> InspectHdf5(const std::string& path) {
  FEEDRATE_ASSIGN_OR_RETURN(auto list, ListHdf5Datasets(path));
  nlohmann::json datasets = nlohmann::json::array();
  for (const auto& d : list) {
    FEEDRATE_ASSIGN_OR_RETURN(auto sha, Hdf5DataSha256(path, d.path));
    nlohmann::json filters = nlohmann::json::array();
    for (const auto& f : d.filters) filters.push_back({{"id", f.id}, {"name", f.name}, {"cd_values", f.cd_values}});
    datasets.push_back({{"path", d.path},
                        {"dtype", d.dtype},
                        {"shape", d.shape},
                        {"maxshape", d.maxshape},
                        {"layout", d.layout},
                        {"chunks", d.chunks.empty() ? nlohmann::json() : nlohmann::json(d.chunks)},
                        {"filters", filters},
                        {"data_offset", d.contiguous_offset ? nlohmann::json(*d.contiguous_offset) : nlohmann::json()},
                        {"storage_size", d.storage_size},
                        {"num_chunks", d.num_chunks},
                        {"nbytes", d.nbytes()},
                        {"sha256_c", sha}});
  }
  std::error_code ec;
  return nlohmann::json{{"file", path},
                        {"format", "hdf5"},
                        {"size_bytes", std::filesystem::file_size(path, ec)},
                        {"datasets", datasets}};
}

std::string Shape(const std::vector<uint64_t>& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += std::to_string(s[i]) + (s.size() == 1 || i + 1 < s.size() ? "," : "");
  return o + ")";
}

// An S3 object copied into a temporary local file (removed when this goes), in 16 MiB ranged GETs.
struct FetchedObject {
  std::string path;
  ~FetchedObject() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

Status FetchObject(const std::string& url, const S3Endpoint& endpoint, FetchedObject* out) {
  FEEDRATE_ASSIGN_OR_RETURN(auto loc, ParseS3Url(url));
  if (loc.prefix.empty()) return Status::InvalidArgument(url + ": names a bucket, not an object");
  FEEDRATE_ASSIGN_OR_RETURN(auto cred, LoadS3Credentials());
  S3Store store{endpoint, cred, loc.bucket, ""};
  FEEDRATE_ASSIGN_OR_RETURN(auto client, store.Connect(1));
  FEEDRATE_ASSIGN_OR_RETURN(auto size, client->Size(loc.prefix));
  std::string tmpl = (std::filesystem::temp_directory_path() / "feedrate-inspect-XXXXXX").string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return Status::Errno("cannot create a temporary file in " + std::filesystem::temp_directory_path().string(), errno);
  UniqueFd owned(fd);
  out->path = tmpl;
  std::string buf(static_cast<size_t>(std::min<uint64_t>(size, 16 << 20)), '\0');
  for (uint64_t off = 0; off < size;) {
    const uint64_t n = std::min<uint64_t>(buf.size(), size - off);
    FEEDRATE_ASSIGN_OR_RETURN(auto got, client->Get(loc.prefix, off, n, buf.data(), n));
    if (got != n) return Status::Corruption(url + ": " + std::to_string(got) + " bytes at offset " + std::to_string(off));
    if (::pwrite(fd, buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) {
      return Status::Errno("cannot write " + tmpl, errno);
    }
    off += n;
  }
  return Status::Ok();
}

// One file's report: its JSON (for --json, "file" the name the user gave) and its text form.
struct Inspected {
  nlohmann::json json;
  std::function<void()> print;
};

void PrintHdf5(const std::string& name, const nlohmann::json& r) {
  std::printf("%s: hdf5, %zu dataset(s)\n", name.c_str(), r["datasets"].size());
  for (const auto& d : r["datasets"]) {
    std::printf("  %-40s %-4s %-18s %-10s offset=%-10s sha256=%s\n", d["path"].get<std::string>().c_str(),
                d["dtype"].get<std::string>().c_str(), d["shape"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(), d["layout"].get<std::string>().c_str(),
                d["data_offset"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(), d["sha256_c"].get<std::string>().c_str());
  }
}

void PrintNumpy(const std::string& name, const FileReport& r) {
  std::printf("%s: %s, %llu bytes, %zu array(s)\n", name.c_str(), r.kind.c_str(), static_cast<unsigned long long>(r.size),
              r.arrays.size());
  for (const auto& ar : r.arrays) {
    const NpArray& a = ar.array;
    std::string off = a.data_offset_in_file ? std::to_string(*a.data_offset_in_file) : "(deflated)";
    std::printf("  %-10s %-6s %-18s fortran=%-5s offset=%-10s nbytes=%-10llu sha256=%s\n",
                a.name.empty() ? "-" : a.name.c_str(), a.header.descr.c_str(), Shape(a.header.shape).c_str(),
                a.header.fortran_order ? "True" : "False", off.c_str(), static_cast<unsigned long long>(a.header.nbytes),
                ar.sha256.c_str());
  }
}

nlohmann::json ImageJson(const std::string& name, const ImageReport& r) {
  return {{"file", name}, {"format", r.format}, {"size_bytes", r.size}, {"width", r.width}, {"height", r.height},
          {"channels", r.channels}, {"pixel_bytes", r.pixel_bytes}, {"pixels_sha256", r.pixels_sha256}};
}

// `file` (a local copy of what the user named `name`) by its detected format.
Result<Inspected> InspectAs(FileFormat format, const std::string& file, const std::string& name, bool decode) {
  auto named = [&](nlohmann::json j) {
    j["file"] = name;
    return j;
  };
  switch (format) {
    case FileFormat::kTfRecord: {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, InspectTfRecordFile(file));
      r.path = name;
      auto held = std::make_shared<TfRecordReport>(std::move(r));
      return Inspected{named(ToJson(*held)), [held] { PrintText(*held); }};
    }
    case FileFormat::kParquet: {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, InspectParquetFile(file, decode));
      auto held = std::make_shared<ParquetReport>(std::move(r));
      return Inspected{named(ToJson(*held)), [held, name] { PrintText(*held, name); }};
    }
    case FileFormat::kHdf5: {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, InspectHdf5(file));
      return Inspected{named(r), [r, name] { PrintHdf5(name, r); }};
    }
    case FileFormat::kJpeg:
    case FileFormat::kPng: {
      FEEDRATE_ASSIGN_OR_RETURN(auto r, InspectImageFile(file));
      return Inspected{ImageJson(name, r), [r, name] {
                         std::printf("%s: %s, %llu bytes, %u x %u, %u channel(s), pixels sha256=%s\n", name.c_str(),
                                     r.format.c_str(), static_cast<unsigned long long>(r.size), r.width, r.height,
                                     r.channels, r.pixels_sha256.c_str());
                       }};
    }
    default: {  // npy, npz, and what is none of the above (the numpy reader says what it is not)
      FEEDRATE_ASSIGN_OR_RETURN(auto r, InspectNumpyFile(file));
      auto held = std::make_shared<FileReport>(std::move(r));
      return Inspected{named(ToJson(*held)), [held, name] { PrintNumpy(name, *held); }};
    }
  }
}

// One argument: an S3 object is fetched into a temporary file first; the format comes from the content.
Result<Inspected> InspectArgument(const std::string& arg, const S3Endpoint& endpoint, bool decode) {
  FetchedObject fetched;
  if (arg.starts_with("s3://")) FEEDRATE_RETURN_IF_ERROR(FetchObject(arg, endpoint, &fetched));
  const std::string& file = fetched.path.empty() ? arg : fetched.path;
  // (Errors name the object, not its temporary copy.)
  auto format = DetectFileFormat(file);  // not there, unreadable, not a regular file
  if (!format.ok()) return format.status().Renamed(fetched.path, arg);
  auto inspected = InspectAs(*format, file, arg, decode);
  if (!inspected.ok()) return inspected.status().Renamed(fetched.path, arg);
  return inspected;
}

}  // namespace

Runner AddInspect(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "describe .npy/.npz arrays, TFRecord records, HDF5 datasets, Parquet files and JPEG/PNG images (format from content)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("files", *files, "files to inspect, or S3 objects (s3://bucket/key: fetched into a temporary file "
                                   "with ranged GETs, inspected, removed)")->required();
  sub->add_flag("--json", *json, "print JSON");
  auto decode = std::make_shared<bool>(false);
  sub->add_flag("--decode", *decode, "Parquet: also decompress and decode every page (as feedrate.decode does in "
                                     "training) and print each column's decoded values, nulls, bytes and sum");
  auto endpoint = std::make_shared<S3Endpoint>();
  auto virtual_host = std::make_shared<bool>(false);
  sub->add_option("--endpoint", endpoint->url, "S3 endpoint URL for s3:// arguments")->check(NoCredentialInUrl());
  sub->add_option("--region", endpoint->region, "S3 signing region (default us-east-1)");
  sub->add_flag("--virtual-host", *virtual_host, "virtual-host addressing for s3:// arguments");
  return [=] {
    S3Endpoint e = *endpoint;
    e.path_style = !*virtual_host;
    nlohmann::json out = nlohmann::json::array();
    int rc = kExitPass;
    for (const auto& arg : *files) {
      auto r = InspectArgument(arg, e, *decode);
      if (!r.ok()) {  // one error line per file; the others are still inspected
        std::fprintf(stderr, "feedrate: error: %s\n", r.status().ToString().c_str());
        rc = kExitError;
      } else if (*json) {
        out.push_back(std::move(r->json));
      } else {
        r->print();
      }
    }
    if (*json) std::printf("%s\n", (files->size() == 1 && out.size() == 1 ? out[0] : out).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return rc;
  };
}

}  // namespace feedrate::cli
