#pragma once
namespace attnconv {
extern const char* const tool_version;  // the CMake project version
extern const char* const git_commit;    // at build time; "-dirty" when the tree had changes
}  // namespace attnconv
