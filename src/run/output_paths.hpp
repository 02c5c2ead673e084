#pragma once
// Before a command runs: the files it writes must not be files it reads, nor
// each other, nor lie inside a folder it fills (a case's --dump-tensors
// folder); and each must be writable (its folder exists or can be made, is a
// folder, and is writable; the file itself is not a folder). Paths compare
// canonically (std::filesystem::weakly_canonical: "..", "." and symbolic
// links resolved), so two spellings of one file are one file.
#include <string>
#include <vector>

namespace attnconv {

// A file or folder of a command and what it is, e.g. {"--junit", "a.xml"}.
struct NamedPath {
  std::string what;
  std::string path;
  // The command reads it before writing it and refuses there what is not a
  // regular file, with its own advice (--resume's journal).
  bool read_first = false;
};

// `made_folders`: folders the command makes (--out): no input or output file
// may be one. `output_folders`: folders it makes and fills with files of any
// name (a case's --dump-tensors folder): nothing else may be inside one.
// Throws InputError naming both sides of the first collision, or the output
// that cannot be written, and why.
void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs,
                   const std::vector<NamedPath>& made_folders, const std::vector<NamedPath>& output_folders = {});

}  // namespace attnconv
