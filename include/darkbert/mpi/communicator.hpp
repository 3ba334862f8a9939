#pragma once
/// @file
/// The little of MPI that darkbert's sharded runs use (the optional `darkbert::mpi` target: any MPI 3,
/// e.g. Debian's Open MPI, found by find_package(MPI)). Errors come back as darkbert::error naming the
/// call and MPI's own message, instead of MPI's default of aborting the job.
///
/// @code
/// darkbert::mpi::Environment mpi(argc, argv);   // MPI_Init_thread ... MPI_Finalize
/// darkbert::mpi::Communicator world;             // MPI_COMM_WORLD
/// auto all = world.all_gather("rank " + std::to_string(world.rank()) + " is done");
/// @endcode

#include <mpi.h>

#include <algorithm>  // std::min
#include <climits>    // INT_MAX
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <string>     // std::string
#include <vector>     // std::vector

#include "darkbert/core/error.hpp"

namespace darkbert::mpi {

/// Throws darkbert::error naming `call` and MPI's message unless `code` is MPI_SUCCESS.
inline void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  fail("MPI: ", call, " failed: ", length > 0 ? std::string(text, static_cast<std::size_t>(length)) : "error " + std::to_string(code));
}

/// Initialises MPI for this process and finalises it on destruction; if MPI is already initialised (a
/// host program did it), leaves both to the host. Only the main thread calls MPI (MPI_THREAD_FUNNELED);
/// OpenMP threads compute between the calls. Errors on MPI_COMM_WORLD return instead of aborting, so
/// check() turns them into exceptions.
class Environment {
 public:
  /// MPI_Init_thread with the command line (MPI may take its own arguments out of it).
  Environment(int& argc, char**& argv) { initialise(&argc, &argv); }
  /// MPI_Init_thread without the command line (MPI 2 and later allow it).
  Environment() { initialise(nullptr, nullptr); }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  /// MPI_Finalize, if this instance initialised MPI.
  ~Environment() {
    int finalised = 0;
    if (owner_ && MPI_Finalized(&finalised) == MPI_SUCCESS && !finalised) MPI_Finalize();
  }

 private:
  void initialise(int* argc, char*** argv) {
    int initialised = 0;
    check(MPI_Initialized(&initialised), "MPI_Initialized");
    if (initialised) return;
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owner_ = true;
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
  bool owner_ = false;
};

/// A communicator (MPI_COMM_WORLD by default) with the operations the sharded runs need: strings
/// gathered and broadcast, and byte buffers of any size sent point to point (in pieces below MPI's int
/// counts). Every call is collective or paired as MPI's are.
class Communicator {
 public:
  /// Wraps `comm` (not owned).
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  int rank() const { return rank_; }            ///< this process's rank, from 0
  int size() const { return size_; }            ///< the number of ranks
  bool is_root() const { return rank_ == 0; }   ///< rank 0, which merges and writes

  /// Every rank's `mine`, indexed by rank, on every rank.
  std::vector<std::string> all_gather(const std::string& mine) const {
    const std::uint64_t length = mine.size();
    std::vector<std::uint64_t> lengths(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    // One broadcast per rank keeps every count within int whatever the total.
    for (int r = 0; r < size_; ++r) {
      auto& text = all[static_cast<std::size_t>(r)];
      text = r == rank_ ? mine : std::string(lengths[static_cast<std::size_t>(r)], '\0');
      broadcast_bytes(text.data(), text.size(), r);
    }
    return all;
  }

  /// `text` as `root` has it, on every rank.
  std::string broadcast(std::string text, int root = 0) const {
    std::uint64_t length = text.size();
    check(MPI_Bcast(&length, 1, MPI_UINT64_T, root, comm_), "MPI_Bcast");
    text.resize(length);
    broadcast_bytes(text.data(), text.size(), root);
    return text;
  }

  /// Sends `bytes` bytes to rank `to` (received by receive with the same size and tag).
  void send(const void* data, std::size_t bytes, int to, int tag) const {
    const char* p = static_cast<const char*>(data);
    do {
      const int n = static_cast<int>(std::min<std::size_t>(bytes, piece));
      check(MPI_Send(p, n, MPI_BYTE, to, tag, comm_), "MPI_Send");
      p += n, bytes -= static_cast<std::size_t>(n);
    } while (bytes > 0);
  }
  /// Receives `bytes` bytes that rank `from` sends with send and the same tag.
  void receive(void* data, std::size_t bytes, int from, int tag) const {
    char* p = static_cast<char*>(data);
    do {
      const int n = static_cast<int>(std::min<std::size_t>(bytes, piece));
      check(MPI_Recv(p, n, MPI_BYTE, from, tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      p += n, bytes -= static_cast<std::size_t>(n);
    } while (bytes > 0);
  }
  /// Sends a string, its length in front (received by receive_string).
  void send_string(const std::string& text, int to, int tag) const {
    const std::uint64_t length = text.size();
    send(&length, sizeof length, to, tag);
    send(text.data(), text.size(), to, tag);
  }
  /// Receives a string send_string sent.
  std::string receive_string(int from, int tag) const {
    std::uint64_t length = 0;
    receive(&length, sizeof length, from, tag);
    std::string text(length, '\0');
    receive(text.data(), text.size(), from, tag);
    return text;
  }

 private:
  static constexpr std::size_t piece = std::size_t{1} << 30;  // 1 GiB per MPI call, below INT_MAX
  static_assert(piece <= static_cast<std::size_t>(INT_MAX));

  void broadcast_bytes(char* data, std::size_t bytes, int root) const {
    do {
      const int n = static_cast<int>(std::min<std::size_t>(bytes, piece));
      check(MPI_Bcast(data, n, MPI_BYTE, root, comm_), "MPI_Bcast");
      data += n, bytes -= static_cast<std::size_t>(n);
    } while (bytes > 0);
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace darkbert::mpi
