#pragma once
// `--shard mpi` for `darkbert reproduce` and `darkbert sweep`: under `mpirun -np N darkbert ... --shard mpi
// --out DIR`, rank r runs shard r+1 of N into its shard folder (--shard-dir), the folders are gathered to
// rank 0 (in place on a shared filesystem, over MPI into OUT.received/ otherwise) and rank 0 merges them into DIR
// (darkbert/mpi/sharded_run.hpp). Built when CMake finds MPI (darkbert::mpi); otherwise the option
// explains how to get it.
#include <cstdio>      // std::fprintf
#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <utility>     // std::pair

#include "darkbert/core/error.hpp"
#include "darkbert/study/shard_plan.hpp"
#ifdef DARKBERT_CLI_MPI
#include "darkbert/mpi/sharded_run.hpp"
#endif

namespace darkbert::cli {

inline constexpr const char* shard_dir_help =
    "With --shard mpi: where each rank writes its shard; {shard} is replaced by K and {rank} by the rank "
    "(node-local scratch works: rank 0 receives what it cannot see over MPI). Default: OUT.shards/shard-{shard}";

// The folder of shard K (rank K-1) from the --shard-dir pattern.
inline std::filesystem::path mpi_shard_dir(const std::filesystem::path& out, const std::string& pattern, int shard) {
  std::string dir = pattern.empty() ? out.string() + ".shards/shard-{shard}" : pattern;
  require(dir.find("{shard}") != std::string::npos || dir.find("{rank}") != std::string::npos, "--shard-dir '", pattern,
          "': give {shard} or {rank} in it, so that the ranks write different folders");
  for (const auto& [key, value] : {std::pair<std::string, int>{"{shard}", shard}, {"{rank}", shard - 1}})
    for (auto at = dir.find(key); at != std::string::npos; at = dir.find(key)) dir.replace(at, key.size(), std::to_string(value));
  return dir;
}

// Runs `run_shard(spec, folder)` on every rank and `merge(folders)` on rank 0; returns true on rank 0
// (which prints the outcome), false on the others. `manifest` is the file a finished shard holds.
template <class RunShard, class Merge>
bool run_over_mpi_ranks([[maybe_unused]] const std::filesystem::path& out, [[maybe_unused]] const std::string& shard_dir,
                        [[maybe_unused]] const char* manifest, [[maybe_unused]] RunShard&& run_shard,
                        [[maybe_unused]] Merge&& merge) {
#ifdef DARKBERT_CLI_MPI
  mpi::Environment environment;
  const mpi::Communicator world;
  const auto summary = mpi::run_sharded(
      world,
      {.manifest = manifest, .shard_dir = [&](int k) { return mpi_shard_dir(out, shard_dir, k); },
       .gathered = out.string() + ".received"},
      run_shard, merge);
  if (world.is_root() && summary.sent_over_mpi > 0)
    std::fprintf(stderr, "mpi: %zu of %d shards received over MPI (%.1f MiB)\n", summary.sent_over_mpi, world.size(),
                 static_cast<double>(summary.bytes_over_mpi) / (1 << 20));
  return world.is_root();
#else
  fail("--shard mpi: this darkbert was built without MPI; install an MPI (Debian: libopenmpi-dev) and configure "
       "again (CMake finds it: darkbert::mpi), or run --shard K/N per rank and --merge (docs/cluster.md)");
#endif
}

}  // namespace darkbert::cli
