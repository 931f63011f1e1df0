// DlLibrary: dlopen/dlsym/dlclose with the names and reasons an error message needs.
#include "loader/gpu/dl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

namespace feedrate::gpu {

Result<DlLibrary> DlLibrary::Open(const char* soname, const char* env_override) {
  const char* over = std::getenv(env_override);
  DlLibrary lib;
  lib.name_ = over != nullptr && *over != '\0' ? over : soname;
  lib.handle_ = ::dlopen(lib.name_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr) {
    const char* why = ::dlerror();
    return Status::NotFound("cannot load " + lib.name_ + " (" + (why != nullptr ? why : "unknown reason") + "; set " +
                            env_override + " to its path)");
  }
  return lib;
}

DlLibrary::~DlLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

DlLibrary::DlLibrary(DlLibrary&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)), name_(std::move(o.name_)) {}

DlLibrary& DlLibrary::operator=(DlLibrary&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    name_ = std::move(o.name_);
  }
  return *this;
}

void* DlLibrary::Find(const char* symbol) const { return handle_ != nullptr ? ::dlsym(handle_, symbol) : nullptr; }

Status DlLibrary::Missing(const char* symbol) const {
  return Status::Unsupported(name_ + " has no " + symbol + " (a driver or library older than Feedrate needs)");
}

}  // namespace feedrate::gpu
