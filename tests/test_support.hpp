#pragma once
// Shared helpers for the tests: where the golden fixtures live, a scratch folder, a file's bytes, the message of a
// darkbert::error, and doctest printers for the vectors the tests compare.

#include <doctest/doctest.h>

#include <cmath>       // std::sqrt
#include <cstdlib>     // std::getenv
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream, std::ofstream
#include <iterator>    // std::istreambuf_iterator
#include <string>      // std::string, std::to_string
#include <vector>      // std::vector

#include "darkbert/core/error.hpp"  // darkbert::error

namespace darkbert::test {

inline std::filesystem::path shared_dir() { return DARKBERT_SHARED_DIR; }
inline std::filesystem::path golden_dir() { return shared_dir() / "golden"; }
inline std::filesystem::path data_dir() { return shared_dir() / "data"; }

// The root of the tests' scratch folders: one per kernel path, since ctest runs a file's plain entry and its
// <file>@<path> entries side by side (tests/CMakeLists.txt).
inline std::filesystem::path scratch_root() {
  const char* kernel = std::getenv("DARKBERT_KERNEL");
  return std::filesystem::path(DARKBERT_TEST_TMP) / (kernel != nullptr ? std::string("kernel-") + kernel : "default");
}

// A fresh, empty scratch folder for one test.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = scratch_root() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The whole file as bytes ("" when it cannot be read).
//   CHECK(read_bytes(dir / "a.svg") == read_bytes(dir / "b.svg"));
inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Root-mean-square of the entries of an Eigen matrix or block, summed in double.
inline double root_mean_square(const auto& m) { return std::sqrt(m.template cast<double>().array().square().mean()); }

// The message of the darkbert::error that f() throws, or "" when it throws none, so that no check on the
// message (==, find, rfind) can pass by accident:
//   CHECK(message_of([] { darkbert::read_tsv("missing.tsv"); }) == "missing.tsv: cannot open");
inline std::string message_of(auto&& f) {
  try {
    f();
  } catch (const darkbert::error& e) {
    return e.what();
  }
  return "";
}

// Writes `content` to `path` byte for byte, creating its folder first; returns the path.
//   const auto p = write_file(dir / "sub" / "bad.tsv", "a\tb\n1\n");
inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace darkbert::test

// Readable failure messages for CHECK(tokens == Strings{...}) and CHECK(ids == Ints{...}): {"a", "b"} / {1, 2}.
namespace doctest {
template <>
struct StringMaker<std::vector<int>> {
  static String convert(const std::vector<int>& v) {
    std::string out = "{";
    for (int x : v) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
    return (out + "}").c_str();
  }
};
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& v) {
    std::string out = "{";
    for (const auto& s : v) out += (out.size() > 1 ? ", \"" : "\"") + s + "\"";
    return (out + "}").c_str();
  }
};
}  // namespace doctest
