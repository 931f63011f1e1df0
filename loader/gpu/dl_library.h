// A shared library opened at run time (dlopen), closed with its owner: how Feedrate reaches CUDA and cuFile
// without linking them, so one binary runs on hosts with and without a GPU.
#pragma once

#include <string>
#include <utility>

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

// A handle a run-time-loaded library gave out (a stream, an event, device memory, a cuFile registration), given
// back through `Release`, a member of the library's function table (`Lib::fn()`), when its owner goes or is
// assigned another; move-only; a moved-from or default one holds nothing. REQUIRES: the Lib object (Cuda, CuFile)
// outlives it, and whatever context `Release` needs is current on the destroying thread.
template <typename Lib, typename Handle, auto Release>
class LibHandle {
 public:
  LibHandle() = default;
  LibHandle(const Lib* lib, Handle h) : lib_(lib), h_(h) {}
  ~LibHandle() { Reset(); }
  LibHandle(LibHandle&& o) noexcept : lib_(std::exchange(o.lib_, nullptr)), h_(std::exchange(o.h_, Handle{})) {}
  LibHandle& operator=(LibHandle&& o) noexcept {
    if (this != &o) {
      Reset();
      lib_ = std::exchange(o.lib_, nullptr);
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  LibHandle(const LibHandle&) = delete;
  LibHandle& operator=(const LibHandle&) = delete;

  Handle get() const { return h_; }
  const Lib* lib() const { return lib_; }
  void Reset() {
    if (lib_ != nullptr) (void)(lib_->fn().*Release)(h_);
    lib_ = nullptr;
    h_ = Handle{};
  }

 private:
  const Lib* lib_ = nullptr;
  Handle h_{};
};

}  // namespace feedrate::gpu
