// Tests for mpi/communicator.hpp, mpi/folder_transfer.hpp and mpi/sharded_run.hpp, run by CTest under
// `mpiexec -n 2` (every rank runs every test case in the same order, so the collective calls pair up).
// Covered: strings gathered and broadcast; a folder sent over MPI byte for byte (a file larger than one
// message, an empty file, nested folders); a name that would leave the folder refused; a sharded run
// with its shards used in place and sent over MPI; a failing shard and a failing merge reported on every
// rank, naming the rank, without a hang.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/mpi/communicator.hpp"
#include "darkbert/mpi/folder_transfer.hpp"
#include "darkbert/mpi/sharded_run.hpp"
#include "../test_support.hpp"

namespace fs = std::filesystem;
namespace mpi = darkbert::mpi;
using darkbert::test::message_of;
using darkbert::test::read_bytes;

namespace {

// A scratch folder of this rank's own (the ranks share the filesystem here).
fs::path rank_dir(const mpi::Communicator& world, const std::string& name) {
  return fs::path(DARKBERT_TEST_TMP) / "mpi" / name / ("rank-" + std::to_string(world.rank()));
}

}  // namespace

TEST_CASE("all_gather and broadcast: every rank's string, empty and long ones too") {
  const mpi::Communicator world;
  REQUIRE(world.size() == 2);
  const std::string mine = world.rank() == 0 ? std::string() : std::string(100000, 'x');
  const auto all = world.all_gather(mine);
  REQUIRE(all.size() == 2);
  CHECK(all[0].empty());
  CHECK(all[1] == std::string(100000, 'x'));
  CHECK(world.broadcast(world.is_root() ? "from rank 0" : "ignored") == "from rank 0");
}

TEST_CASE("send_folder / receive_folder: the folder arrives byte for byte, in a fresh folder") {
  const mpi::Communicator world;
  const fs::path source = rank_dir(world, "transfer") / "shard";
  const fs::path target = rank_dir(world, "transfer") / "received";
  // 64 MiB + 3: one file in two messages.
  std::string big(std::size_t{64} << 20, '\0');
  for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  big += "end";
  if (world.rank() == 1) {
    fs::remove_all(source);
    fs::create_directories(source / "units/a/b");
    std::ofstream(source / "units/a/b/unit.json") << "{\"seconds\": 1}";
    std::ofstream(source / "empty.csv");
    std::ofstream(source / "big.bin", std::ios::binary) << big;
    const auto sent = mpi::send_folder(world, source, 0);
    CHECK(sent.files == 3);
  } else {
    fs::create_directories(target);
    std::ofstream(target / "stale.txt") << "left from before";
    const auto got = mpi::receive_folder(world, 1, target);
    CHECK(got.files == 3);
    CHECK(got.bytes == big.size() + 14);
    CHECK(read_bytes(target / "units/a/b/unit.json") == "{\"seconds\": 1}");
    CHECK(fs::file_size(target / "empty.csv") == 0);
    CHECK(read_bytes(target / "big.bin") == big);
    CHECK_FALSE(fs::exists(target / "stale.txt"));
  }
}

TEST_CASE("receive_folder: a name that leaves the folder is refused, its bytes still drained") {
  const mpi::Communicator world;
  const fs::path target = rank_dir(world, "hostile") / "received";
  if (world.rank() == 1) {
    const std::uint64_t count = 2, size = 3;
    world.send(&count, sizeof count, 0, 7301);
    for (const std::string name : {"../escaped.txt", "fine.txt"}) {
      world.send_string(name, 0, 7301);
      world.send(&size, sizeof size, 0, 7301);
      world.send("abc", 3, 0, 7301);
      world.send_string("", 0, 7301);
    }
  } else {
    const auto m = message_of([&] { mpi::receive_folder(world, 1, target); });
    CHECK(m.find("rank 1 sent the file name '../escaped.txt', which would not stay inside the shard folder") != std::string::npos);
    CHECK_FALSE(fs::exists(target.parent_path() / "escaped.txt"));
    CHECK(read_bytes(target / "fine.txt") == "abc");
  }
  world.broadcast("");  // both ranks leave together
}

TEST_CASE("run_sharded: every rank runs its shard, rank 0 merges them in shard order, in place or sent over MPI") {
  const mpi::Communicator world;
  for (const bool always_send : {false, true}) {
    const fs::path root = fs::path(DARKBERT_TEST_TMP) / "mpi" / (always_send ? "sent" : "in_place");
    std::vector<std::string> merged;
    const auto summary = mpi::run_sharded(
        world,
        {.manifest = "shard.json", .shard_dir = [&](int k) { return root / ("shard-" + std::to_string(k)); },
         .gathered = root / "received", .always_send = always_send},
        [&](darkbert::study::ShardSpec s, const fs::path& dir) {
          fs::remove_all(dir);
          fs::create_directories(dir / "units");
          std::ofstream(dir / "units" / ("unit-" + std::to_string(s.index))) << "shard " << s.index << " of " << s.count;
          std::ofstream(dir / "shard.json") << s.index;
        },
        [&](const std::vector<fs::path>& folders) {
          for (int k = 1; k <= 2; ++k)
            merged.push_back(read_bytes(folders[static_cast<std::size_t>(k - 1)] / "units" / ("unit-" + std::to_string(k))));
        });
    CHECK(summary.shard.index == world.rank() + 1);
    CHECK(summary.shard.count == 2);
    if (world.is_root()) {
      CHECK(merged == std::vector<std::string>{"shard 1 of 2", "shard 2 of 2"});
      CHECK(summary.sent_over_mpi == (always_send ? 1u : 0u));
      CHECK(summary.folders[1] == (always_send ? root / "received/shard-2" : fs::absolute(root / "shard-2").lexically_normal()));
    } else {
      CHECK(merged.empty());
    }
  }
}

TEST_CASE("run_sharded: a failing shard or merge is the same error on every rank, naming the rank") {
  const mpi::Communicator world;
  const fs::path root = fs::path(DARKBERT_TEST_TMP) / "mpi" / "failing";
  const mpi::ShardedRunFolders where{
      .manifest = "shard.json", .shard_dir = [&](int k) { return root / ("shard-" + std::to_string(k)); }, .gathered = root / "received"};
  const auto write_shard = [](darkbert::study::ShardSpec, const fs::path& dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "shard.json") << "{}";
  };
  bool merged = false;
  auto m = message_of([&] {
    mpi::run_sharded(
        world, where,
        [&](darkbert::study::ShardSpec s, const fs::path& dir) {
          if (s.index == 2) throw darkbert::error("units/x: out of memory");
          write_shard(s, dir);
        },
        [&](const std::vector<fs::path>&) { merged = true; });
  });
  CHECK(m == "the sharded run failed on 1 of 2 ranks:\n  rank 1 (shard 2/2): units/x: out of memory");
  CHECK_FALSE(merged);
  m = message_of([&] {
    mpi::run_sharded(world, where, write_shard, [](const std::vector<fs::path>&) { throw darkbert::error("report.md: disk full"); });
  });
  CHECK(m == "the merge failed on 1 of 2 ranks:\n  rank 0 (shard 1/2): report.md: disk full");
}

int main(int argc, char** argv) {
  mpi::Environment environment(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
