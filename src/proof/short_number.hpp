#pragma once
// A number as plain-words messages and plot titles show it: three significant
// digits (printf "%.3g").
#include <cstdio>
#include <string>

namespace attnconv {

inline std::string short_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

}  // namespace attnconv
