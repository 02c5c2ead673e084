#pragma once
// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface, for the provenance of
// loaded files: the report and the journal record each .npy's digest, so that
// `--resume` recomputes the cases whose input changed.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace attnconv {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  // The digest of everything given so far, as 64 lowercase hex digits.
  std::string hex_digest() const;

 private:
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> context_;
};

std::string sha256_hex(std::string_view bytes);

// The buffer a file is read into while it is hashed: below glibc's mmap
// threshold (128 KiB), so each read of a file reuses heap memory. A buffer of
// 1 MiB was a fresh mapping each time, a 2 MiB huge page zeroed by the kernel
// (process_environment.hpp) for every file however small: 9 % of `attnconv
// html` of 100 000 cases, whose validation reads a few tiny .npy per case.
constexpr std::size_t hash_read_bytes = std::size_t(64) << 10;

}  // namespace attnconv
