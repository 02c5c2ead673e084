#include "run/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "run/atomic_file.hpp"
#include "io/bounded_file.hpp"
#include "io/errors.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

namespace {

// The journal is read whole: larger than any run writes is refused before reading.
constexpr std::uintmax_t max_journal_bytes = std::uintmax_t(1) << 30;

constexpr int journal_version = 1;

std::string dump_line(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

json header(const std::vector<Case>& cases) {
  json list = json::array();
  for (const auto& c : cases) list.push_back({{"name", c.name}, {"fingerprint", case_fingerprint(c)}});
  return {{"attnconv_journal", journal_version}, {"cases", list}};
}

void write_all(int fd, const std::string& text, const std::string& path) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot write the journal " + path + ": " + std::strerror(errno));
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) throw std::runtime_error("cannot flush the journal " + path + ": " + std::strerror(errno));
}

int open_append(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open the journal " + path + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {  // swapped for a FIFO or device since it was written
    ::close(fd);
    throw std::runtime_error("cannot open the journal " + path + ": it is not a regular file");
  }
  return fd;
}

// Why a journaled result must not be reused: the case errored (a timeout
// included), or a file it loaded differs now (size or SHA-256). Empty: reuse.
std::string stale_reason(const json& entry, const Case& c) {
  if (entry_status(entry) == Status::error) return "it errored";
  const json was = entry.value("provenance", json::object());
  for (const auto& [name, now] : c.provenance.items()) {
    if (!now.contains("sha256")) continue;
    if (!was.contains(name) || was[name] != now)
      return "its " + name + " file " + now.value("file", std::string()) + " changed since it ran (now " +
             std::to_string(now.value("bytes", 0ull)) + " bytes, SHA-256 " + now.value("sha256", std::string()) + ")";
  }
  return "";
}

}  // namespace

std::string case_fingerprint(const Case& c) {
  const json identity = {{"name", c.name},           {"proof", c.proof},   {"params", c.params},
                         {"tolerance", c.request.tolerance}, {"expect", to_string(c.request.expect)}, {"weights", c.weights}};
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (const unsigned char ch : identity.dump(-1, ' ', false, json::error_handler_t::replace))
    hash = (hash ^ ch) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

Journal Journal::start(const std::string& path, const std::vector<Case>& cases) {
  write_file_atomic(path, dump_line(header(cases)));
  return Journal(path, open_append(path));
}

Journal Journal::resume(const std::string& path, const std::vector<Case>& cases,
                        std::vector<std::optional<json>>& finished) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    throw InputError(path + ": no journal to resume (the last run finished, or none ran with this --out); "
                            "run without --resume");
  std::string text;
  try {
    text = read_bounded_file(path, max_journal_bytes, "journal");
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + "; run without --resume to start over");
  }
  std::istringstream stream(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  const auto corrupt = [&](std::size_t n, const std::string& what) {
    return InputError(path + ": line " + std::to_string(n + 1) + ": " + what + "; run without --resume to start over");
  };
  json head;
  try {
    head = lines.empty() ? json() : json::parse(lines[0]);
  } catch (const json::exception&) {
  }
  if (!head.is_object() || head.value("attnconv_journal", 0) != journal_version || !head.contains("cases") ||
      !head["cases"].is_array())
    throw corrupt(0, "not an attnconv journal header");
  const json expected = header(cases)["cases"];
  const json& recorded = head["cases"];
  for (std::size_t k = 0; k < std::max(recorded.size(), expected.size()); ++k) {
    if (k < recorded.size() && k < expected.size() && recorded[k] == expected[k]) continue;
    const std::string was = k < recorded.size() ? recorded[k].value("name", std::string("?")) : "(none)";
    const std::string now = k < expected.size() ? expected[k]["name"].get<std::string>() : "(none)";
    throw InputError(path + ": the journal was written for a different case list (" +
                     std::to_string(recorded.size()) + " cases then, " + std::to_string(expected.size()) +
                     " now; case #" + std::to_string(k + 1) + " was '" + was + "', is '" + now +
                     (was == now ? "' with other parameters" : "'") +
                     "); --resume needs the same case files, filter and parameters; run without --resume to start over");
  }
  finished.assign(cases.size(), std::nullopt);
  std::string kept = lines[0] + "\n";
  for (std::size_t n = 1; n < lines.size(); ++n) {
    json line;
    try {
      line = json::parse(lines[n]);
    } catch (const json::exception&) {
      if (n + 1 == lines.size()) break;  // a line torn by a kill: that case runs again
      throw corrupt(n, "not JSON");
    }
    if (!line.is_object() || !line.contains("index") || !line["index"].is_number_unsigned() ||
        line["index"].get<std::size_t>() >= cases.size() || !line.contains("entry") || !line["entry"].is_object() ||
        line["entry"].value("name", std::string()) != cases[line["index"].get<std::size_t>()].name)
      throw corrupt(n, "not a finished case of this run");
    const std::size_t index = line["index"].get<std::size_t>();
    if (const std::string why = stale_reason(line["entry"], cases[index]); !why.empty()) {
      std::cerr << "attnconv: --resume: case '" << cases[index].name << "' runs again: " << why << "\n";
      finished[index] = std::nullopt;
      continue;
    }
    finished[index] = line["entry"];
    kept += lines[n] + "\n";
  }
  write_file_atomic(path, kept);  // drops a torn last line before appending
  return Journal(path, open_append(path));
}

Journal::Journal(Journal&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(std::size_t index, const json& entry) {
  write_all(fd_, dump_line({{"index", index}, {"entry", entry}}), path_);
}

void Journal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace attnconv
