#include "run/output_paths.hpp"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "io/errors.hpp"
#include "io/quote.hpp"
#include "io/regular_file.hpp"
#include "run/signal_cleanup.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

fs::path canonical_path(const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  const fs::path canonical = fs::weakly_canonical(absolute, error);
  return error ? absolute.lexically_normal() : canonical;
}

std::string named(const NamedPath& p) { return p.what + " " + p.path; }

// Why no file can be made in the existing `folder`, or empty. access(2) says
// yes to root for any folder, /proc included, where no file can be made: a
// file is made and removed at once (signals held, so none is left behind).
std::string cannot_create_in(const fs::path& folder) {
  if (::access(folder.c_str(), W_OK | X_OK) != 0) return "cannot write in " + folder.string() + ": " + std::strerror(errno);
  const BlockCleanupSignals blocked;
  const fs::path probe = folder / (".attnconv-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) return "cannot write in " + folder.string() + ": " + std::strerror(errno);
  if (fd >= 0) ::close(fd), ::unlink(probe.c_str());
  return "";
}

// Why `path` cannot be written as a file, or empty.
std::string unwritable(const fs::path& path) {
  for (const auto& part : path)
    if (part.native().size() > NAME_MAX)
      return "the name '" + clip(part.string()) + "' is longer than " + std::to_string(NAME_MAX) + " bytes";
  if (path.native().size() >= PATH_MAX) return "the path is longer than " + std::to_string(PATH_MAX - 1) + " bytes";
  std::error_code error;
  if (fs::is_directory(path, error)) return "it is a folder";
  fs::path folder = path.parent_path();
  while (!folder.empty() && !fs::exists(folder, error) && folder != folder.parent_path()) folder = folder.parent_path();
  if (!fs::is_directory(folder, error)) return folder.string() + " is not a folder";
  return cannot_create_in(folder);
}

// Why a folder on the way to `path` (or `path` itself, a folder to make) cannot
// be made or entered: a symbolic link that leads nowhere, or empty.
std::string broken_link(const fs::path& path) {
  fs::path prefix;
  for (const auto& part : path) {
    prefix /= part;
    std::error_code error;
    if (fs::is_symlink(fs::symlink_status(prefix, error)) && !fs::exists(prefix, error))
      return prefix.string() + " is a symbolic link to a missing folder (or a loop of links)";
  }
  return "";
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs,
                   const std::vector<NamedPath>& made_folders, const std::vector<NamedPath>& output_folders) {
  std::map<fs::path, const NamedPath*> folders;
  for (const auto& folder : output_folders) folders.emplace(canonical_path(folder.path), &folder);
  std::map<fs::path, const NamedPath*> seen;
  for (const auto& input : inputs) seen.emplace(canonical_path(input.path), &input);
  const auto inside_folder = [&](const fs::path& file) -> const NamedPath* {
    if (folders.empty()) return nullptr;
    for (fs::path p = file; !p.empty() && p != p.root_path(); p = p.parent_path())
      if (const auto found = folders.find(p); found != folders.end()) return found->second;
    return nullptr;
  };
  for (const auto& [path, input] : seen)
    if (const NamedPath* folder = inside_folder(path))
      throw InputError(named(*input) + " is inside " + named(*folder) + ", which this command writes: it would be overwritten");
  for (const auto& output : outputs) {
    const fs::path path = canonical_path(output.path);
    if (const auto found = seen.find(path); found != seen.end())
      throw InputError(named(output) + " is " + named(*found->second) +
                       ": a command never overwrites its own input or output; choose another path");
    if (const NamedPath* folder = inside_folder(path))
      throw InputError(named(output) + " is inside " + named(*folder) + ", which this command also writes; choose another path");
    if (const std::string why = broken_link(fs::path(output.path).parent_path()); !why.empty())
      throw InputError(named(output) + " cannot be written: " + why);
    // Not followed: a link is refused whatever it leads to (a dangling one, /dev/stdout), and so is a device,
    // a FIFO or a socket; write_file_atomic checks again right before its rename.
    if (const std::string why = output.read_first ? "" : not_a_regular_file(output.path); !why.empty())
      throw InputError(named(output) + " cannot be written: it " + why +
                       "; an output is a regular file or nothing, and is never replaced otherwise");
    if (const std::string why = unwritable(path); !why.empty()) throw InputError(named(output) + " cannot be written: " + why);
    seen.emplace(path, &output);
  }
  for (const auto& made : made_folders) {
    const fs::path path = canonical_path(made.path);
    if (const std::string why = broken_link(made.path); !why.empty()) throw InputError(named(made) + " cannot be made: " + why);
    if (const auto found = seen.find(path); found != seen.end())
      throw InputError(named(*found->second) + " is " + named(made) + ", a folder this command makes; choose another path");
    folders.emplace(path, &made);
  }
  for (const auto& [path, folder] : folders) {
    if (const std::string why = unwritable(path / "file"); !why.empty())
      throw InputError(named(*folder) + " cannot be written: " + why);
    const NamedPath* const made = folder;  // clang 14 cannot capture a structured binding
    if (std::find_if(output_folders.begin(), output_folders.end(), [made](const NamedPath& p) { return &p == made; }) ==
        output_folders.end())
      continue;
    // A folder filled with files of any name (a case's dumps): none already there may be other than a regular file.
    std::error_code error;
    for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error))
      if (const std::string why = not_a_regular_file(it->path().string()); !why.empty() && why != "is a folder")
        throw InputError(named(*folder) + " cannot be written: " + it->path().string() + " " + why +
                         "; a dump is written only as a regular file");
  }
}

}  // namespace attnconv
