#pragma once
/// @file
/// One sharded run over the ranks of an MPI job: rank r runs shard r+1 of N (N = the number of ranks)
/// exactly as `--shard K/N` would, the shard folders are gathered to rank 0, and rank 0 merges them
/// exactly as `--merge` would; the merged files are the single-process run's (docs/cluster.md).
///
/// Gathering costs nothing on a shared filesystem: each rank reports where its shard is and the bytes of
/// its manifest (shard.json, sweep_shard.json), and rank 0 uses the folder in place when it sees the same
/// manifest there. Otherwise (node-local scratch) that rank sends the folder over MPI
/// (mpi/folder_transfer.hpp) into `gathered/shard-K` on rank 0.
///
/// Failures never leave a rank waiting: a rank whose shard throws still takes part in the exchange that
/// follows, and then every rank throws the same error, naming each failed rank and its message; the
/// merge's outcome is shared the same way.
///
/// @code
/// darkbert::mpi::Environment mpi(argc, argv);
/// darkbert::mpi::run_sharded(darkbert::mpi::Communicator{}, {.manifest = "shard.json", .shard_dir = [](int k) {
///       return "study.shards/shard-" + std::to_string(k); }, .gathered = "study.shards"},
///     [&](darkbert::study::ShardSpec s, const std::filesystem::path& dir) { run_one_shard(s, dir); },
///     [&](const std::vector<std::filesystem::path>& shards) { merge_them(shards); });
/// @endcode

#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/core/detail/text_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/mpi/communicator.hpp"
#include "darkbert/mpi/folder_transfer.hpp"
#include "darkbert/study/shard_plan.hpp"

namespace darkbert::mpi {

/// Where the shards of a run go.
struct ShardedRunFolders {
  std::string manifest;                               ///< the file a finished shard folder holds
  std::function<std::filesystem::path(int)> shard_dir;  ///< where the rank running shard K (1..N) writes it
  std::filesystem::path gathered;                     ///< rank 0 receives the shards it cannot see into gathered/shard-K
  bool always_send = false;  ///< send every other rank's shard over MPI, even one rank 0 sees in place
};

/// What run_sharded did on this rank.
struct ShardedRunSummary {
  study::ShardSpec shard;                       ///< this rank's shard
  std::vector<std::filesystem::path> folders;   ///< rank 0: the shard folders merged, by shard
  std::size_t sent_over_mpi = 0;                ///< rank 0: shards received over MPI (not on a shared filesystem)
  std::uint64_t bytes_over_mpi = 0;             ///< rank 0: their bytes
};

namespace detail {

// Every rank's outcome (empty = success) gathered; if any failed, the same error on every rank.
inline void throw_if_any_failed(const Communicator& world, const std::string& my_error, const char* stage) {
  const auto errors = world.all_gather(my_error);
  std::string message;
  int failed = 0;
  for (int r = 0; r < world.size(); ++r) {
    const auto& e = errors[static_cast<std::size_t>(r)];
    if (e.empty()) continue;
    ++failed;
    message += "\n  rank " + std::to_string(r) + " (shard " + std::to_string(r + 1) + "/" + std::to_string(world.size()) + "): " + e;
  }
  require(failed == 0, stage, " failed on ", failed, " of ", world.size(), " ranks:", message);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what()[0] ? e.what() : "unknown error";
  }
  return {};
}

}  // namespace detail

/// Runs `run_shard(shard, folder)` on every rank for its shard, gathers the folders to rank 0 and runs
/// `merge(folders)` there (folders by shard). Collective: every rank of `world` calls it. Returns on every
/// rank when the merge is done; throws on every rank if any shard, the gathering or the merge failed.
template <class RunShard, class Merge>
ShardedRunSummary run_sharded(const Communicator& world, const ShardedRunFolders& where, RunShard&& run_shard, Merge&& merge) {
  namespace fs = std::filesystem;
  const int ranks = world.size();
  ShardedRunSummary summary{.shard = {.index = world.rank() + 1, .count = ranks}};
  // 1. Every rank runs its shard; then each says where it is and what its manifest holds.
  fs::path mine;
  std::string manifest;
  detail::throw_if_any_failed(world, detail::error_of([&] {
                                mine = fs::absolute(where.shard_dir(summary.shard.index)).lexically_normal();
                                run_shard(summary.shard, mine);
                                manifest = darkbert::detail::read_text_file(mine / where.manifest, "shard manifest");
                              }),
                              "the sharded run");
  const auto where_is = world.all_gather(mine.string());
  const auto manifests = world.all_gather(manifest);

  // 2. Rank 0 uses in place the shards it sees with the same manifest, and asks for the others.
  std::string fetch(static_cast<std::size_t>(ranks), '0');
  if (world.is_root()) {
    for (int r = 1; r < ranks; ++r) {
      const fs::path there = where_is[static_cast<std::size_t>(r)];
      // Anything unreadable there is not the rank's shard: it is sent instead (no throw on rank 0 alone,
      // which would leave the others waiting).
      std::string seen;
      const bool readable = fs::is_regular_file(there / where.manifest) && detail::error_of([&] {
                              seen = darkbert::detail::read_text_file(there / where.manifest, "shard manifest");
                            }).empty();
      const bool visible = readable && seen == manifests[static_cast<std::size_t>(r)];
      fetch[static_cast<std::size_t>(r)] = visible && !where.always_send ? '0' : '1';
    }
  }
  fetch = world.broadcast(fetch);
  std::string transfer_error;
  if (world.is_root()) {
    for (int r = 0; r < ranks; ++r) {
      fs::path folder = where_is[static_cast<std::size_t>(r)];
      if (fetch[static_cast<std::size_t>(r)] == '1') {
        folder = where.gathered / ("shard-" + std::to_string(r + 1));
        const auto e = detail::error_of([&] {
          const auto got = receive_folder(world, r, folder);
          ++summary.sent_over_mpi, summary.bytes_over_mpi += got.bytes;
        });
        if (transfer_error.empty()) transfer_error = e;
      }
      summary.folders.push_back(folder);
    }
  } else if (fetch[static_cast<std::size_t>(world.rank())] == '1') {
    transfer_error = detail::error_of([&] { send_folder(world, mine, 0); });
  }
  detail::throw_if_any_failed(world, transfer_error, "gathering the shards");

  // 3. Rank 0 merges; every rank learns how it went.
  std::string merge_error;
  if (world.is_root()) merge_error = detail::error_of([&] { merge(summary.folders); });
  detail::throw_if_any_failed(world, merge_error, "the merge");
  return summary;
}

}  // namespace darkbert::mpi
