#pragma once
/// @file
/// A folder sent from one rank to another, file by file, for ranks that share no filesystem (a shard
/// written to node-local scratch, gathered to rank 0 for the merge). The sender streams each file in
/// pieces of 64 MiB and ends it with a status, so a file it cannot read fails the transfer on both sides
/// with the file's name instead of leaving the receiver waiting. The receiver checks every name
/// (mpi/folder_files.hpp) and writes each file atomically into a fresh folder.
///
/// @code
/// if (world.rank() == 1) darkbert::mpi::send_folder(world, "scratch/shard-2", 0);
/// if (world.rank() == 0) darkbert::mpi::receive_folder(world, 1, "study.shards/shard-2");
/// @endcode

#include <algorithm>   // std::fill, std::min
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/mpi/communicator.hpp"
#include "darkbert/mpi/folder_files.hpp"

namespace darkbert::mpi {

namespace detail {
inline constexpr int folder_tag = 7301;                       // the messages of one folder transfer
inline constexpr std::size_t folder_piece = std::size_t{64} << 20;  // bytes per message of a file
}  // namespace detail

/// What a folder transfer moved.
struct FolderTransfer {
  std::size_t files = 0;    ///< files moved
  std::uint64_t bytes = 0;  ///< their bytes
};

/// Sends every regular file under `dir` to rank `to`. If a file cannot be read, the rest of its bytes are
/// sent as zeros and its status names the problem; the receiver then fails with that message, and so
/// does this call, after the transfer has ended on both sides.
inline FolderTransfer send_folder(const Communicator& comm, const std::filesystem::path& dir, int to) {
  const auto files = list_folder(dir);
  const std::uint64_t count = files.size();
  comm.send(&count, sizeof count, to, detail::folder_tag);
  FolderTransfer sent;
  std::string problem;
  std::vector<char> buffer(detail::folder_piece);
  for (const auto& f : files) {
    comm.send_string(f.relative, to, detail::folder_tag);
    const std::uint64_t size = f.size;
    comm.send(&size, sizeof size, to, detail::folder_tag);
    std::ifstream in(dir / f.relative, std::ios::binary);
    std::string status = in ? "" : (dir / f.relative).string() + ": cannot be opened";
    for (std::uint64_t left = size; left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
      if (status.empty() && !in.read(buffer.data(), static_cast<std::streamsize>(n)))
        status = (dir / f.relative).string() + ": read failed (changed while being sent?)";
      if (!status.empty()) std::fill(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n), '\0');
      comm.send(buffer.data(), n, to, detail::folder_tag);
      left -= n;
    }
    comm.send_string(status, to, detail::folder_tag);
    if (problem.empty()) problem = status;
    ++sent.files, sent.bytes += size;
  }
  require(problem.empty(), "sending ", dir.string(), " to rank ", to, ": ", problem);
  return sent;
}

/// Receives a folder send_folder sends from rank `from` into `dir`, which is emptied first. Every file
/// name is checked to stay inside `dir`; a file the sender could not read is an error naming it.
inline FolderTransfer receive_folder(const Communicator& comm, int from, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string sender = "rank " + std::to_string(from);
  std::uint64_t count = 0;
  comm.receive(&count, sizeof count, from, detail::folder_tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  FolderTransfer received;
  std::string problem;
  std::vector<char> buffer(detail::folder_piece);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string name = comm.receive_string(from, detail::folder_tag);
    std::uint64_t size = 0;
    comm.receive(&size, sizeof size, from, detail::folder_tag);
    // Whatever goes wrong here (a bad name, a full disk) is remembered and the bytes are still received
    // and dropped, so the sender finishes and both sides report the problem.
    std::string local_problem;
    std::optional<AtomicFileWriter> out;
    try {
      const fs::path target = dir / checked_relative_path(name, sender);
      fs::create_directories(target.parent_path());
      out.emplace(target);
    } catch (const std::exception& e) {
      local_problem = e.what();
    }
    for (std::uint64_t left = size; left > 0;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
      comm.receive(buffer.data(), n, from, detail::folder_tag);
      try {
        if (out) out->write(buffer.data(), n);
      } catch (const std::exception& e) {
        local_problem = e.what(), out.reset();
      }
      left -= n;
    }
    const std::string status = comm.receive_string(from, detail::folder_tag);
    try {
      if (out && status.empty()) out->commit();
    } catch (const std::exception& e) {
      local_problem = e.what();
    }
    if (problem.empty()) problem = !local_problem.empty() ? local_problem : status;
    ++received.files, received.bytes += size;
  }
  require(problem.empty(), "receiving a shard from ", sender, " into ", dir.string(), ": ", problem);
  return received;
}

}  // namespace darkbert::mpi
