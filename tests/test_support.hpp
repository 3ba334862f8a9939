#pragma once
// Shared helpers for the tests: where the golden fixtures live, a scratch folder, tolerance checks.

#include <filesystem>  // std::filesystem::path
#include <string>      // std::string

namespace darkbert::test {

inline std::filesystem::path shared_dir() { return DARKBERT_SHARED_DIR; }
inline std::filesystem::path golden_dir() { return shared_dir() / "golden"; }
inline std::filesystem::path data_dir() { return shared_dir() / "data"; }

// A fresh, empty scratch folder for one test.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::path(DARKBERT_TEST_TMP) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace darkbert::test
