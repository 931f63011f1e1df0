// SHA-256 through OpenSSL's EVP interface.
#include "loader/format/sha256.h"

#include <openssl/evp.h>

namespace feedrate {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  bool ok = false;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  ctx_->ok = ctx_->md != nullptr && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1;
}
Sha256::~Sha256() = default;

Status Sha256::Update(const void* data, size_t n) {
  if (!ctx_->ok || EVP_DigestUpdate(ctx_->md, data, n) != 1) return Status::IoError("OpenSSL sha256 update failed");
  return Status::Ok();
}

Result<std::string> Sha256::FinishHex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx_->ok || EVP_DigestFinal_ex(ctx_->md, md, &len) != 1) return Status::IoError("OpenSSL sha256 final failed");
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

std::string Sha256Hex(const void* data, size_t n) {
  Sha256 h;
  Status st = h.Update(data, n);
  auto hex = h.FinishHex();
  return st.ok() && hex.ok() ? *hex : std::string();
}

}  // namespace feedrate
