// Tests for mpi/folder_files.hpp (no MPI needed): the folder listing a rank sends, and the check every
// received file name passes before anything is written.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/mpi/folder_files.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;

TEST_CASE("list_folder: every regular file, relative and sorted, with its size") {
  const auto dir = darkbert::test::scratch_dir("mpi_folder_files");
  fs::create_directories(dir / "units/b");
  fs::create_directories(dir / "empty_folder");
  std::ofstream(dir / "units/b/unit.json") << "{}";
  std::ofstream(dir / "shard.json") << "12345";
  std::ofstream(dir / "units/a.csv");
  const auto files = darkbert::mpi::list_folder(dir);
  REQUIRE(files.size() == 3);
  CHECK(files[0].relative == "shard.json");
  CHECK(files[0].size == 5);
  CHECK(files[1].relative == "units/a.csv");
  CHECK(files[1].size == 0);
  CHECK(files[2].relative == "units/b/unit.json");
  CHECK(message_of([&] { darkbert::mpi::list_folder(dir / "absent"); }).find("absent: not a folder") != std::string::npos);
}

TEST_CASE("checked_relative_path: names that stay inside the folder pass, every other is refused by name") {
  CHECK(darkbert::mpi::checked_relative_path("units/x/unit.json", "rank 1") == fs::path("units/x/unit.json"));
  CHECK(darkbert::mpi::checked_relative_path("shard.json", "rank 1") == fs::path("shard.json"));
  const std::vector<std::string> bad_names = {"", "/etc/passwd", "../outside", "units/../../x", "./shard.json", "units/",
                                              "a/./b", std::string("a\0b", 3)};
  for (const auto& bad : bad_names) {
    const auto m = message_of([&] { darkbert::mpi::checked_relative_path(bad, "rank 3"); });
    CHECK_MESSAGE(m.find("rank 3 sent the file name") != std::string::npos, bad);
    CHECK(m.find("would not stay inside the shard folder") != std::string::npos);
  }
}
