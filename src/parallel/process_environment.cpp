#include "parallel/process_environment.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "parallel/blas_kernel.hpp"

namespace attnconv {
namespace {

bool huge_pages_on_request() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(file, modes);
  return modes.find("[madvise]") != std::string::npos;
}

// GLIBC_TUNABLES with glibc.malloc.hugetlb=1 added; empty when it is there or not wanted.
std::string tunables_with_huge_pages() {
  const char* set = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = set ? set : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos || !huge_pages_on_request()) return "";
  return tunables + (tunables.empty() ? "" : ":") + "glibc.malloc.hugetlb=1";
}

}  // namespace

void use_best_environment(char** argv) {
  const std::string kernel = better_blas_kernel();
  const std::string tunables = tunables_with_huge_pages();
  if (kernel.empty() && tunables.empty()) return;
  // Set even if the exec fails, so that no child retries it.
  if (!kernel.empty() && setenv("OPENBLAS_CORETYPE", kernel.c_str(), 1) != 0) return;
  if (!tunables.empty() && setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace attnconv
