// SHA-256 (OpenSSL EVP) as lowercase hex, whole buffers or streamed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "loader/status.h"

namespace feedrate {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Status Update(const void* data, size_t n);
  Result<std::string> FinishHex();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string Sha256Hex(const void* data, size_t n);

}  // namespace feedrate
