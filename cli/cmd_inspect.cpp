// `feedrate inspect`: arrays of .npy/.npz files (format from content) with offsets and sha256 of stored data.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loader/format/inspect.h"

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

std::string Shape(const std::vector<uint64_t>& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += std::to_string(s[i]) + (s.size() == 1 || i + 1 < s.size() ? "," : "");
  return o + ")";
}

}  // namespace

Runner AddInspect(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "describe the arrays in .npy/.npz files");
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("files", *files, "files to inspect")->required();
  sub->add_flag("--json", *json, "print JSON");
  return [=] {
    nlohmann::json out = nlohmann::json::array();
    int rc = 0;
    for (const auto& f : *files) {
      auto r = InspectNumpyFile(f);
      if (!r.ok()) {
        std::fprintf(stderr, "feedrate: error: %s\n", r.status().ToString().c_str());
        rc = 2;
        continue;
      }
      if (*json) {
        out.push_back(ToJson(*r));
        continue;
      }
      std::printf("%s: %s, %llu bytes, %zu array(s)\n", f.c_str(), r->kind.c_str(), static_cast<unsigned long long>(r->size),
                  r->arrays.size());
      for (const auto& ar : r->arrays) {
        const NpArray& a = ar.array;
        std::string off = a.data_offset_in_file ? std::to_string(*a.data_offset_in_file) : "(deflated)";
        std::printf("  %-10s %-6s %-18s fortran=%-5s offset=%-10s nbytes=%-10llu sha256=%s\n",
                    a.name.empty() ? "-" : a.name.c_str(), a.header.descr.c_str(), Shape(a.header.shape).c_str(),
                    a.header.fortran_order ? "True" : "False", off.c_str(),
                    static_cast<unsigned long long>(a.header.nbytes), ar.sha256.c_str());
      }
    }
    if (*json) std::printf("%s\n", (files->size() == 1 && out.size() == 1 ? out[0] : out).dump(2).c_str());
    return rc;
  };
}

}  // namespace feedrate::cli
