// A shared library opened at run time (dlopen), closed with its owner: how Feedrate reaches CUDA and cuFile
// without linking them, so one binary runs on hosts with and without a GPU.
#pragma once

#include <string>

#include "loader/status.h"

namespace feedrate::gpu {

class DlLibrary {
 public:
  DlLibrary() = default;
  // Opens the library named by the environment variable `env_override` when it is set (tests point it at a double;
  // users at a library outside the loader's path), else `soname`. NotFound names both and dlerror's reason.
  static Result<DlLibrary> Open(const char* soname, const char* env_override);
  ~DlLibrary();
  DlLibrary(DlLibrary&& o) noexcept;
  DlLibrary& operator=(DlLibrary&& o) noexcept;
  DlLibrary(const DlLibrary&) = delete;
  DlLibrary& operator=(const DlLibrary&) = delete;

  // The address of `symbol`, or nullptr when the library does not export it.
  void* Find(const char* symbol) const;
  // Fills *fn with `symbol`; Unsupported naming the library and the symbol when it is missing (an older driver).
  template <typename Fn>
  Status Bind(Fn** fn, const char* symbol) const {
    *fn = reinterpret_cast<Fn*>(Find(symbol));
    return *fn != nullptr ? Status::Ok() : Missing(symbol);
  }
  // The path it was opened as ("libcuda.so.1", or the override).
  const std::string& name() const { return name_; }

 private:
  Status Missing(const char* symbol) const;

  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace feedrate::gpu
