// Data root: the documented search order, the per-user cache, the not-found message and extract_once (also
// from several threads at once).
#include <doctest/doctest.h>

#include <cstdlib>     // std::system
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <map>         // std::map
#include <sstream>     // std::ostringstream
#include <string>      // std::string
#include <thread>      // std::thread
#include <vector>      // std::vector

#include "darkbert/data/root.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::DataRoot;
using darkbert::test::message_of;

namespace {

darkbert::EnvironmentLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

void touch(const fs::path& p, const std::string& content = "x\n") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

}  // namespace

TEST_CASE("user_cache_dir: DARKBERT_CACHE, then XDG_CACHE_HOME/darkbert, then HOME/.cache/darkbert") {
  CHECK(darkbert::user_cache_dir(fake_env({{"DARKBERT_CACHE", "/c"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})) ==
        fs::path("/c"));
  CHECK(darkbert::user_cache_dir(fake_env({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})) == fs::path("/x/darkbert"));
  CHECK(darkbert::user_cache_dir(fake_env({{"HOME", "/h"}})) == fs::path("/h/.cache/darkbert"));
  const auto msg = message_of([] { darkbert::user_cache_dir(fake_env({})); });
  CHECK(msg.find("DARKBERT_CACHE") != std::string::npos);
  CHECK(msg.find("HOME") != std::string::npos);
}

TEST_CASE("from_environment: $DARKBERT_DATA, then ../shared/data beside the checkout, then <cache>/data") {
  const auto root = DataRoot::from_environment(fake_env({{"DARKBERT_DATA", "/d"}, {"DARKBERT_CACHE", "/c"}}));
  REQUIRE(root.candidates().size() == 3);
  CHECK(root.candidates()[0].path == fs::path("/d"));
  // The checkout of this test is the one whose ../shared is DARKBERT_SHARED_DIR.
  CHECK(fs::equivalent(root.candidates()[1].path, darkbert::test::data_dir()));
  CHECK(root.candidates()[2].path == fs::path("/c/data"));
  CHECK(root.cache_dir() == fs::path("/c"));

  const auto unset = DataRoot::from_environment(fake_env({{"HOME", "/h"}}));
  CHECK(unset.candidates()[0].path.empty());
  CHECK(unset.candidates()[0].unset_reason == "not set");
  CHECK(unset.candidates()[2].path == fs::path("/h/.cache/darkbert/data"));
}

TEST_CASE("find: first folder holding the file wins; a miss names every place and how to get the data") {
  const auto dir = darkbert::test::scratch_dir("data_root_find");
  touch(dir / "a" / "glue" / "SST-2" / "dev.tsv", "first\n");
  touch(dir / "b" / "glue" / "SST-2" / "dev.tsv", "second\n");
  touch(dir / "b" / "ud" / "x.conllu");
  DataRoot root({{"one", dir / "a", ""}, {"two", dir / "b", ""}, {"three", dir / "missing", ""}, {"four", {}, "not set"}},
                dir / "cache");
  CHECK(root.find("glue/SST-2/dev.tsv", "SST-2 dev", "") == dir / "a" / "glue" / "SST-2" / "dev.tsv");
  CHECK(root.find("ud/x.conllu", "ud", "") == dir / "b" / "ud" / "x.conllu");
  CHECK_FALSE(root.try_find("glue/QQP/dev.tsv").has_value());

  const auto msg = message_of([&] { root.find("glue/QQP/dev.tsv", "GLUE QQP dev", "download it from X"); });
  CHECK(msg.find("GLUE QQP dev") != std::string::npos);
  CHECK(msg.find("glue/QQP/dev.tsv") != std::string::npos);
  CHECK(msg.find((dir / "a").string()) != std::string::npos);
  CHECK(msg.find((dir / "b").string()) != std::string::npos);
  CHECK(msg.find("folder does not exist") != std::string::npos);  // three
  CHECK(msg.find("(not set)") != std::string::npos);             // four
  CHECK(msg.find("download it from X") != std::string::npos);
}

TEST_CASE("the shared data folder is found through the default order") {
  const auto root = DataRoot::from_environment(fake_env({{"DARKBERT_CACHE", "/nonexistent-cache"}}));
  const auto p = root.find("ud/en_ewt-ud-dev.conllu", "UD dev", darkbert::ud_hint);
  CHECK(fs::equivalent(p, darkbert::test::data_dir() / "ud" / "en_ewt-ud-dev.conllu"));
}

TEST_CASE("extract_once unpacks a .tar.xz once, atomically; a broken archive leaves nothing behind") {
  const auto dir = darkbert::test::scratch_dir("data_root_extract");
  touch(dir / "src" / "pkg" / "lu" / "lu1.xml", "<x/>\n");
  const auto archive = dir / "pkg.tar.xz";
  const std::string cmd = "tar -cJf '" + archive.string() + "' -C '" + (dir / "src").string() + "' pkg";
  REQUIRE(std::system(cmd.c_str()) == 0);

  std::ostringstream log;
  const auto dest = darkbert::extract_once(archive, dir / "cache" / "pkg", &log);
  CHECK(fs::exists(dest / "pkg" / "lu" / "lu1.xml"));
  CHECK(log.str().find("unpacking") != std::string::npos);
  // Second call: the folder exists, nothing is unpacked again (a marker file survives).
  touch(dest / "marker");
  std::ostringstream quiet;
  CHECK(darkbert::extract_once(archive, dir / "cache" / "pkg", &quiet) == dest);
  CHECK(fs::exists(dest / "marker"));
  CHECK(quiet.str().empty());

  touch(dir / "broken.tar.xz", "this is not xz data");
  const auto msg = message_of([&] { darkbert::extract_once(dir / "broken.tar.xz", dir / "cache" / "broken", nullptr); });
  CHECK(msg.find("broken.tar.xz") != std::string::npos);
  CHECK(msg.find("failed") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "cache" / "broken"));
  for (const auto& entry : fs::directory_iterator(dir / "cache"))
    CHECK(entry.path().filename().string().find("partial") == std::string::npos);

  const auto missing = message_of([&] { darkbert::extract_once(dir / "nope.tar.xz", dir / "cache" / "nope", nullptr); });
  CHECK(missing.find("nope.tar.xz: archive not found") != std::string::npos);
}

TEST_CASE("extract_once from several threads at once: one unpacks, the others wait and get the whole folder") {
  const auto dir = darkbert::test::scratch_dir("data_root_extract_threads");
  for (int i = 0; i < 200; ++i) touch(dir / "src" / "pkg" / "lu" / ("lu" + std::to_string(i) + ".xml"), "<lu/>\n");
  const auto archive = dir / "pkg.tar.xz";
  const std::string cmd = "tar -cJf '" + archive.string() + "' -C '" + (dir / "src").string() + "' pkg";
  REQUIRE(std::system(cmd.c_str()) == 0);
  constexpr int threads = 4;
  std::vector<std::ostringstream> logs(threads);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        darkbert::extract_once(archive, dir / "cache" / "pkg", &logs[static_cast<std::size_t>(t)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  for (auto& t : pool) t.join();
  int unpacked = 0;
  for (int t = 0; t < threads; ++t) {
    CHECK_MESSAGE(errors[static_cast<std::size_t>(t)].empty(), errors[static_cast<std::size_t>(t)]);
    unpacked += logs[static_cast<std::size_t>(t)].str().find("unpacking") != std::string::npos;
  }
  CHECK(unpacked == 1);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir / "cache" / "pkg" / "pkg" / "lu")) files += entry.is_regular_file();
  CHECK(files == 200);
}
