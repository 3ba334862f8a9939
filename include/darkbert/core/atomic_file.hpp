#pragma once
// Crash-safe file output: every file darkbert writes goes through here. The bytes go to a temporary file in
// the same folder, which is flushed, fsync'ed, closed (each step checked) and then renamed over the target,
// so a reader — or the next run after a crash, a SIGKILL or a full disk — sees either the old complete
// file or the new complete file, never a torn one. Errors name the file and the reason:
//   "out/attentions.npy: write failed: No space left on device".
//
//   darkbert::write_file_atomically("out/summary.json", text);
//
//   darkbert::AtomicFileWriter out("model.safetensors");   // streaming form
//   out.write(header.data(), header.size());
//   out.write(data.data(), data.size());
//   out.commit();            // without commit() the destructor removes the temporary file
//
// A target that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) cannot be replaced by a
// rename; it is written in place, with the same error checks (writing to /dev/full reports ENOSPC).

#include <fcntl.h>     // open, O_* flags
#include <sys/stat.h>  // stat, S_ISREG
#include <unistd.h>    // write, fsync, close, unlink, getpid

#include <atomic>       // std::atomic (unique temporary names within a process)
#include <cerrno>       // errno, EINTR
#include <cstdio>       // std::rename
#include <cstring>      // std::strerror
#include <sstream>      // std::ostringstream
#include <filesystem>   // std::filesystem::path
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::exchange

#include "detail/text_file.hpp"  // read_text_file (append_file_atomically)
#include "error.hpp"

namespace darkbert {

/// Streams bytes to a temporary file beside `target` and renames it over the target on commit() (see the
/// file comment); without commit() the destructor removes the temporary file.
class AtomicFileWriter {
 public:
  /// Opens the temporary file (or, for a device or FIFO, the target itself); errors name the target.
  explicit AtomicFileWriter(std::filesystem::path target) : target_(std::move(target)) {
    struct stat st {};
    if (::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      if (S_ISDIR(st.st_mode)) fail(target_.string(), ": cannot write: is a directory");
      in_place_ = true;  // a device or FIFO: there is nothing to replace atomically
      fd_ = open_retrying(target_, O_WRONLY | O_CLOEXEC, 0);
      if (fd_ < 0) fail(target_.string(), ": cannot open for writing: ", std::strerror(errno));
      return;
    }
    static std::atomic<unsigned> counter{0};
    const auto dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
    // Dot-prefixed so that globs over the folder skip it; pid + counter keep concurrent writers apart.
    // (appended piece by piece: GCC 12 warns falsely, -Wrestrict, on "." + a temporary string)
    std::string name = ".";
    name.append(target_.filename().string()).append(".tmp-").append(std::to_string(::getpid())).append("-");
    name.append(std::to_string(counter.fetch_add(1)));
    temp_ = dir / name;
    fd_ = open_retrying(temp_, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    // Named by the target: the temporary file sits beside it, so the reason (no such folder, read-only,
    // no permission) is the target's.
    if (fd_ < 0) fail(target_.string(), ": cannot open for writing: ", std::strerror(errno));
  }
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter() { abandon(); }

  /// The file this writer replaces.
  const std::filesystem::path& target() const { return target_; }

  /// Appends bytes (small writes are gathered in a 64 KiB buffer); throws naming the target on any error
  /// (ENOSPC, EIO, ...), here or at the latest in commit().
  void write(const void* data, std::size_t size) {
    require(fd_ >= 0, target_.string(), ": write after commit or failure");
    if (buffer_.size() + size <= buffer_bytes) {
      buffer_.append(static_cast<const char*>(data), size);
      return;
    }
    flush_buffer();
    if (size < buffer_bytes) buffer_.append(static_cast<const char*>(data), size);
    else write_all(data, size);
  }
  /// Appends a string's bytes.
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  /// Makes the new content durable and visible under the target name.
  void commit() {
    require(fd_ >= 0, target_.string(), ": commit after commit or failure");
    flush_buffer();
    // fsync fails with EINVAL on devices and pipes that cannot sync; that is not a write error.
    if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail_and_abandon("fsync failed: ", std::strerror(errno));
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) fail_and_abandon("close failed: ", std::strerror(errno));
    if (in_place_) return;
    if (std::rename(temp_.c_str(), target_.c_str()) != 0)
      fail_and_abandon("cannot rename ", temp_.string(), " into place: ", std::strerror(errno));
    temp_.clear();
    sync_directory();
  }

 private:
  static constexpr std::size_t buffer_bytes = 1 << 16;

  void flush_buffer() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  void write_all(const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ::ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail_and_abandon("write failed: ", n < 0 ? std::strerror(errno) : "no progress");
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  static int open_retrying(const std::filesystem::path& path, int flags, mode_t mode) {
    int fd;
    do fd = ::open(path.c_str(), flags, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
  }

  // Persists the rename itself; best effort (some file systems refuse to open or sync folders).
  void sync_directory() const {
    const auto dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
  }

  void abandon() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
  }

  template <class... Parts>
  [[noreturn]] void fail_and_abandon(const Parts&... parts) {
    const std::string message = detail_message(parts...);
    abandon();
    throw error(message);
  }
  template <class... Parts>
  std::string detail_message(const Parts&... parts) const {
    std::ostringstream out;
    out << target_.string() << ": ";
    (out << ... << parts);
    return out.str();
  }

  std::filesystem::path target_;
  std::filesystem::path temp_;  // empty once renamed (or when writing in place)
  std::string buffer_;
  int fd_ = -1;
  bool in_place_ = false;
};

// Replaces `path` with `bytes`, crash-safely (see above).
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFileWriter out(path);
  out.write(bytes);
  out.commit();
}

// Appends `rows` to the file at `path` (a missing file counts as empty) by rewriting it crash-safely: a kill
// leaves the file as it was before or after the append, never with a torn last row for a reader to
// misread. For logs of a few thousand rows (training curves, finished runs). `what` names it in errors.
inline void append_file_atomically(const std::filesystem::path& path, std::string_view rows, const char* what) {
  std::error_code ec;
  std::string bytes = std::filesystem::exists(path, ec) ? detail::read_text_file(path, what) : std::string();
  bytes += rows;
  write_file_atomically(path, bytes);
}

}  // namespace darkbert
