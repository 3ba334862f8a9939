#pragma once
/// @file
/// An exclusive advisory lock on a file, held for the object's lifetime: processes that share a cache or a
/// results folder take turns. flock is released by the kernel if the process dies, so a killed run never
/// leaves the folder locked.
///
/// @code
/// const darkbert::FileLock lock(dir / "runs.csv.lock");   // waits for any other holder
/// // read, change and rewrite the shared file
/// @endcode

#include <fcntl.h>     // ::open
#include <sys/file.h>  // ::flock
#include <unistd.h>    // ::close

#include <cerrno>      // errno
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem::path

#include "error.hpp"

namespace darkbert {

/// Holds an exclusive flock on `path` (created if absent) until destroyed.
class FileLock {
 public:
  /// Opens `path` and waits for the lock; errors name the file.
  explicit FileLock(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(path.string(), ": cannot open the lock file: ", std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) {
        const int err = errno;
        ::close(fd_);
        fail(path.string(), ": cannot lock: ", std::strerror(err));
      }
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace darkbert
