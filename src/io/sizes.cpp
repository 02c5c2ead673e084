#include "io/sizes.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "io/errors.hpp"

namespace attnconv {

std::size_t decimal_prefix(const std::string& text) {
  std::size_t k = 0, digits = 0;
  const auto skip_digits = [&] {
    while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k, ++digits;
  };
  skip_digits();
  if (k < text.size() && text[k] == '.') ++k, skip_digits();
  if (digits == 0) return 0;
  if (k < text.size() && (text[k] == 'e' || text[k] == 'E')) {
    std::size_t e = k + 1;
    if (e < text.size() && (text[e] == '+' || text[e] == '-')) ++e;
    if (e < text.size() && std::isdigit(static_cast<unsigned char>(text[e]))) {
      k = e;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
    }
  }
  return k;
}

double parse_size(const std::string& text) {
  const auto bad = [&] {
    return InputError("--max-memory: '" + text + "' is not a size (bytes, or a number with K, M, G or T, e.g. 512M, 2GiB)");
  };
  const std::size_t used = decimal_prefix(text);
  if (used == 0) throw bad();
  const double value = std::strtod(text.substr(0, used).c_str(), nullptr);
  std::string unit = text.substr(used);
  for (auto& ch : unit) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (unit == "IB") throw bad();
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'I') unit.pop_back();
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(unit[0]) != std::string::npos)
    scale = std::pow(1024.0, double(units.find(unit[0]) + 1));
  else if (!unit.empty())
    throw bad();
  if (!std::isfinite(value * scale) || value <= 0) throw bad();
  return value * scale;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int k = 0;
  while (bytes >= 1024 && k < 6) bytes /= 1024, ++k;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, k == 0 ? "%.0f %s" : "%.1f %s", bytes, units[k]);
  return buffer;
}

double default_max_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 4.0 * 1024 * 1024 * 1024;
  return double(pages) * double(page_size) / 2;
}

}  // namespace attnconv
