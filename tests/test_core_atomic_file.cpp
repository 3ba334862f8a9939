// core/atomic_file.hpp: the target is always the old or the new complete file, even when the writer is
// killed mid-write; write errors (a full disk) are reported by name; devices are written in place.
#include <doctest/doctest.h>

#include <signal.h>    // kill, SIGKILL
#include <sys/wait.h>  // waitpid
#include <unistd.h>    // fork, _exit, usleep

#include <filesystem>  // std::filesystem
#include <random>      // std::mt19937
#include <string>      // std::string

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/io/safetensors.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

namespace {

namespace fs = std::filesystem;

// A version of the file: `n` bytes of one repeated letter, so a mix of two versions is detectable.
std::string version(char letter, std::size_t n) { return std::string(n, letter); }

// Entries in a folder (a finished or abandoned writer must leave no temporary behind).
std::size_t count_files(const fs::path& dir) {
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  return files;
}

}  // namespace

TEST_CASE("write_file_atomically replaces the file and leaves no temporary behind") {
  const auto dir = darkbert::test::scratch_dir("atomic_basic");
  darkbert::write_file_atomically(dir / "a.txt", "old");
  darkbert::write_file_atomically(dir / "a.txt", "new content");
  CHECK(read_bytes(dir / "a.txt") == "new content");
  CHECK(count_files(dir) == 1);
}

TEST_CASE("an uncommitted writer leaves the old file untouched and removes its temporary") {
  const auto dir = darkbert::test::scratch_dir("atomic_abandon");
  darkbert::write_file_atomically(dir / "a.txt", "old");
  {
    darkbert::AtomicFileWriter out(dir / "a.txt");
    out.write(version('x', 1 << 20));  // beyond the buffer: really on disk in the temporary
  }
  CHECK(read_bytes(dir / "a.txt") == "old");
  CHECK(count_files(dir) == 1);
}

TEST_CASE("a writer killed with SIGKILL at random points leaves the old or the new file, never a torn one") {
  const auto dir = darkbert::test::scratch_dir("atomic_kill");
  const auto target = dir / "out.bin";
  const std::size_t size = 3 << 20;  // several write calls and an fsync per version
  darkbert::write_file_atomically(target, version('a', size));
  std::mt19937 rng(20191107);
  std::uniform_int_distribution<int> delay_us(0, 40000);
  int saw_old = 0, saw_new = 0;
  for (int round = 0; round < 24; ++round) {
    const char old_letter = read_bytes(target)[0];
    const char new_letter = static_cast<char>('a' + (round + 1) % 26);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        for (;;) {  // rewrite the new version until killed
          darkbert::AtomicFileWriter out(target);
          for (std::size_t done = 0; done < size; done += 256 << 10) out.write(version(new_letter, 256 << 10));
          out.commit();
        }
      } catch (...) {
        _exit(3);
      }
    }
    ::usleep(static_cast<useconds_t>(delay_us(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    const std::string now = read_bytes(target);
    REQUIRE(now.size() == size);  // complete, never truncated
    CHECK(now.find_first_not_of(now[0]) == std::string::npos);  // one version, not a mix
    CHECK((now[0] == old_letter || now[0] == new_letter));
    (now[0] == old_letter ? saw_old : saw_new) += 1;
    for (const auto& e : fs::directory_iterator(dir))  // temporaries of the killed writer may remain; clean them
      if (e.path() != target) fs::remove(e.path());
  }
  MESSAGE("kill rounds: old file ", saw_old, " times, new file ", saw_new, " times");
  CHECK(saw_old + saw_new == 24);
}

TEST_CASE("a full disk is a darkbert::error naming the file (/dev/full)") {
  REQUIRE(fs::exists("/dev/full"));
  const auto e = darkbert::test::message_of([] { darkbert::write_file_atomically("/dev/full", std::string(1 << 17, 'x')); });
  CHECK(e.find("/dev/full") != std::string::npos);
  CHECK(e.find("No space left on device") != std::string::npos);
  // Small writes are buffered; the error still comes, at commit.
  const auto small = darkbert::test::message_of([] { darkbert::write_file_atomically("/dev/full", "x"); });
  CHECK(small.find("/dev/full: write failed: No space left on device") != std::string::npos);
  // Every writer built on it reports the same way, e.g. safetensors.
  std::map<std::string, darkbert::TensorBytes> tensors;
  const float v[2] = {1, 2};
  tensors["t"] = darkbert::tensor_bytes(v, {2});
  CHECK(darkbert::test::message_of([&] { darkbert::write_safetensors("/dev/full", tensors); })
            .find("No space left on device") != std::string::npos);
  CHECK(fs::is_character_file("/dev/full"));  // written in place, never replaced by a rename
}

TEST_CASE("devices are written in place and folders refused") {
  darkbert::write_file_atomically("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
  const auto dir = darkbert::test::scratch_dir("atomic_dir");
  CHECK(darkbert::test::message_of([&] { darkbert::write_file_atomically(dir, "x"); }).find("is a directory") !=
        std::string::npos);
  CHECK(darkbert::test::message_of([&] { darkbert::write_file_atomically(dir / "missing" / "f", "x"); }) ==
        (dir / "missing" / "f").string() + ": cannot open for writing: No such file or directory");
}

TEST_CASE("append_file_atomically appends to a file, starts a missing one, and names an unreadable one") {
  const auto dir = darkbert::test::scratch_dir("append_file_atomically");
  const auto log = dir / "log.csv";
  darkbert::append_file_atomically(log, "step,loss\n", "training log");  // missing: started
  darkbert::append_file_atomically(log, "1,0.5\n", "training log");
  darkbert::append_file_atomically(log, "2,0.25\n", "training log");
  CHECK(read_bytes(log) == "step,loss\n1,0.5\n2,0.25\n");
  std::filesystem::create_directories(dir / "folder.csv");
  CHECK(darkbert::test::message_of([&] { darkbert::append_file_atomically(dir / "folder.csv", "x\n", "training log"); })
            == "training log '" + (dir / "folder.csv").string() + "' is a directory, not a file");
}
