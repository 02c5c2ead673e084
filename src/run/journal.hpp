#pragma once
// DIR/report.journal.jsonl: a header line naming the cases of the run, then
// one line per finished case, each flushed to disk (fsync) as it finishes.
// An interrupted or killed run loses no finished case; `--resume` reads the
// journal back. A finished run removes it.
#include <optional>
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

class Journal {
 public:
  // A new journal at `path` (an older one is replaced). Throws
  // std::runtime_error when it cannot be written.
  static Journal start(const std::string& path, const std::vector<Case>& cases);

  // Reads the journal at `path` into `finished` (one slot per case, filled for
  // the cases already done) and continues it. A case that errored (or timed
  // out), or whose loaded files changed since (size or SHA-256, see
  // Case::provenance), is left unfilled, to run again, with a note on stderr. Throws InputError when there is
  // none or it was written for a different case list.
  static Journal resume(const std::string& path, const std::vector<Case>& cases,
                        std::vector<std::optional<json>>& finished);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&&) = delete;
  Journal(const Journal&) = delete;
  ~Journal();

  // One finished case: a line, written and fsynced before returning.
  void append(std::size_t index, const json& entry);

  // The run finished: the journal is no longer needed.
  void remove();

  const std::string& path() const { return path_; }

 private:
  Journal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

// What identifies a case for --resume: its name and everything that sets its
// numbers (proof, params, tolerance, expect, weights), hashed.
std::string case_fingerprint(const Case& c);

}  // namespace attnconv
