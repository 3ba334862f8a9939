#pragma once
/// @file
/// The files of a shard folder as one rank sends them to another (mpi/sharded_run.hpp), without MPI: the
/// list a sender walks, and the check a receiver applies to every path it is sent before it writes, so a
/// confused or hostile peer cannot write outside the folder it is given.
///
/// @code
/// for (const auto& f : darkbert::mpi::list_folder("shard-2")) send(f.relative, f.size);
/// const auto path = darkbert::mpi::checked_relative_path(name, "rank 1");  // "units/x/unit.json", or an error
/// @endcode

#include <algorithm>   // std::sort
#include <cstdint>     // std::uintmax_t
#include <filesystem>  // std::filesystem
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/core/error.hpp"

namespace darkbert::mpi {

/// A regular file of a folder: its path relative to the folder ('/'-separated) and its size in bytes.
struct FolderFile {
  std::string relative;     ///< e.g. "units/patterns/MRPC/unit.json"
  std::uintmax_t size = 0;  ///< bytes
};

/// Every regular file under `dir` (symbolic links followed, as the merge reads them), sorted by path, so
/// two ranks list the same folder in the same order. An absent folder is an error naming it.
inline std::vector<FolderFile> list_folder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  require(fs::is_directory(dir), dir.string(), ": not a folder, so there is no shard to send");
  std::vector<FolderFile> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink)) {
    if (!entry.is_regular_file()) continue;
    files.push_back({fs::relative(entry.path(), dir).generic_string(), entry.file_size()});
  }
  std::sort(files.begin(), files.end(), [](const FolderFile& a, const FolderFile& b) { return a.relative < b.relative; });
  return files;
}

/// The path `relative` as received from `from` (e.g. "rank 1"), checked to stay inside the folder it is
/// written to: not empty, not absolute, no "." or ".." part, no empty part. Anything else is an error
/// quoting it.
inline std::filesystem::path checked_relative_path(const std::string& relative, const std::string& from) {
  const std::filesystem::path p(relative);
  bool ok = !relative.empty() && p.is_relative() && relative.find('\0') == std::string::npos && relative.back() != '/';
  for (const auto& part : p)
    if (part.empty() || part == "." || part == "..") ok = false;
  if (ok) return p;
  std::string shown;  // control characters escaped, so the message shows all of the name
  for (const unsigned char c : relative) {
    if (c >= 0x20 && c != 0x7f) {
      shown += static_cast<char>(c);
    } else {
      const char hex[] = "0123456789abcdef";
      shown += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    }
  }
  fail(from, " sent the file name '", shown, "', which would not stay inside the shard folder");
}

}  // namespace darkbert::mpi
