#include "io/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace attnconv {

Sha256::Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256: OpenSSL EVP_DigestInit_ex failed");
}

void Sha256::update(const void* data, std::size_t size) {
  if (EVP_DigestUpdate(context_.get(), data, size) != 1) throw std::runtime_error("SHA-256: EVP_DigestUpdate failed");
}

std::string Sha256::hex_digest() const {
  // Finalise a copy, so that the running context stays usable.
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> copy(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!copy || EVP_MD_CTX_copy_ex(copy.get(), context_.get()) != 1 || EVP_DigestFinal_ex(copy.get(), digest, &length) != 1)
    throw std::runtime_error("SHA-256: EVP_DigestFinal_ex failed");
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int k = 0; k < length; ++k) out += {hex[digest[k] >> 4], hex[digest[k] & 15]};
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex_digest();
}

}  // namespace attnconv
