#pragma once
// Where a case's tensor comes from, once the loader has resolved "weights":
// an .npy file, or an entry of an .npz file (numpy.savez), each path relative
// to the case file. In a resolved "weights" object a source is the .npy path
// (a string) or {"file": "<.npz path>", "entry": "<name>"}.
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/npy_check.hpp"
#include "io/npz.hpp"
#include "proof/proof.hpp"

namespace attnconv {

// The tensors that are not a module's parameters: the data it is applied to,
// and an outside implementation's output for it.
inline bool is_data_tensor(const std::string& name) { return name == "input" || name == "reference_output"; }

struct TensorSource {
  std::string file;   // as the case gives it, relative to the case file
  std::string entry;  // the .npz entry; empty: `file` is an .npy
};

// From a resolved "weights" value; throws std::runtime_error for any other JSON.
TensorSource tensor_source(const json& value);
json to_json(const TensorSource& source);

// `source.file` relative to the folder of `case_file`.
std::string source_path(const std::string& case_file, const TensorSource& source);

// The check of check_npy_file on the source's .npy or .npz entry. `problem`
// names the file (and the entry); `digest` is of the .npy file (an .npz
// entry leaves it empty: file_digest gives the archive's) and `entry_sha256`
// of an .npz entry's .npy bytes.
struct SourceCheck {
  std::string problem;
  FileDigest digest;
  std::string entry_sha256;
  std::vector<std::size_t> shape;  // as the header gives it
};
SourceCheck check_tensor_source(const std::string& case_file, const TensorSource& source, const std::string& descr,
                                const std::optional<std::vector<std::size_t>>& shape);

// The source's tensor, under the rules of read_npy_file; `digest` is of the
// .npy bytes read (an .npz: of the entry; Crc::by_digest: the caller compares it
// with the digest the loader recorded, io/npz.hpp). Throws std::runtime_error.
template <class T>
NpyTensor<T> read_tensor_source(const std::string& case_file, const TensorSource& source,
                                const std::optional<std::vector<std::size_t>>& shape, Crc crc = Crc::check);

// Size and SHA-256 of the whole file at `path`, read in blocks.
FileDigest file_digest(const std::string& path);
// file_digest, once per file (path, size and modification time) in a process:
// the cases of a network share one state_dict. A digest under way on another
// thread is waited for, not made again.
FileDigest cached_file_digest(const std::string& path);

// Makes the cached_file_digest of each of `paths`, in order, on a thread of its
// own, while the caller goes on (the loader checks the entries of one file
// while the next is hashed). A problem is left for the caller's own
// cached_file_digest to meet. The destructor stops after the file under way.
class DigestsAhead {
 public:
  explicit DigestsAhead(std::vector<std::string> paths);
  ~DigestsAhead();
  DigestsAhead(const DigestsAhead&) = delete;
  DigestsAhead& operator=(const DigestsAhead&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

}  // namespace attnconv
