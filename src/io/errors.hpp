#pragma once
#include <stdexcept>
#include <string>

namespace attnconv {

// Bad input: the runner exits 2 and runs nothing. The message names the file,
// the case and the key.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The cases ran but a result could not be written (a full disk, a path
// replaced meanwhile): exit 3. The message says what was kept and how to
// finish (--resume).
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A parameter of one case is wrong; the loader adds the file and the case.
struct ParamError : std::runtime_error {
  ParamError(std::string key_, const std::string& message) : std::runtime_error(message), key(std::move(key_)) {}
  std::string key;
};

}  // namespace attnconv
