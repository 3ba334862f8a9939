#pragma once
// Shared by the libFuzzer targets: a scratch folder per process, files written from the input, and the
// rule every target checks — a darkbert::error is the expected answer to a bad input; anything else (a
// crash, a sanitizer report, another exception type, a hang, a huge allocation) is a finding.

#include <unistd.h>  // getpid

#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint8_t
#include <cstdio>       // std::fprintf
#include <cstdlib>      // std::abort, std::getenv
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ofstream
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"

namespace darkbert::fuzz {

// Multi-file inputs (a folder, a vocabulary plus a text) are the files' bytes joined by this line; the
// seed builder (make_seeds.py) writes them the same way and every dictionary lists it.
inline constexpr std::string_view file_separator = "\n=#=next file=#=\n";

inline std::vector<std::string_view> split_files(const std::uint8_t* data, std::size_t size, std::size_t count) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < count) {
    const auto at = rest.find(file_separator);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + file_separator.size());
  }
  parts.push_back(rest);
  while (parts.size() < count) parts.emplace_back();
  return parts;
}

// A folder of this process under $TMPDIR (or /tmp), emptied on each call.
inline std::filesystem::path scratch(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  const auto dir = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                   ("darkbert-fuzz-" + std::to_string(::getpid())) / name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void put(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();  // the harness's own I/O must work
}

// Fails the run (a finding) when a property the library promises does not hold.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace darkbert::fuzz

// Each target defines fuzz_one(); a darkbert::error out of it is the clean refusal a bad input should get.
void fuzz_one(const std::uint8_t* data, std::size_t size);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    fuzz_one(data, size);
  } catch (const darkbert::error&) {
  }
  return 0;
}
