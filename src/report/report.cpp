#include "report/report.hpp"

#include <gnu/libc-version.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "parallel/threads.hpp"
#include "proof/verdict.hpp"
#include "report/version.hpp"

extern "C" {
char* openblas_get_config(void);
int openblas_get_num_threads(void);
}

namespace attnconv {

json tool_info() { return {{"name", "attnconv"}, {"version", tool_version}, {"git_commit", git_commit}}; }

namespace {
std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

// glibc's version and the malloc tunables the run had (parallel/process_environment.hpp): where
// its memory comes from changes its time, never its numbers.
std::string allocator() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return std::string("glibc ") + gnu_get_libc_version() + (tunables ? std::string(", GLIBC_TUNABLES=") + tunables : "");
}
}  // namespace

json environment() {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  return {{"compiler", compiler()},
          {"cxx_standard", __cplusplus},
          {"blas", std::string("OpenBLAS ") + openblas_get_config()},
          {"blas_threads", openblas_get_num_threads()},
          {"engine_threads", engine_threads()},
          {"allocator", allocator()},
          {"host", host},
          {"start_time", utc_now()}};
}

void update_summary(json& report, double seconds) {
  int passed = 0, failed = 0, errored = 0;
  json verdicts = json::object();
  for (const Verdict v : all_verdicts) verdicts[to_string(v)] = 0;
  for (const auto& c : report["cases"]) {
    const std::optional<Status> status = entry_status(c);
    passed += status == Status::pass, failed += status == Status::fail, errored += status == Status::error;
    if (const std::optional<Verdict> v = entry_verdict(c)) verdicts[to_string(*v)] = verdicts[to_string(*v)].get<int>() + 1;
  }
  report["summary"] = {{"total", report["cases"].size()},
                       {"passed", passed},
                       {"failed", failed},
                       {"errored", errored},
                       {"verdicts", verdicts},
                       {"seconds", seconds}};
}

}  // namespace attnconv
