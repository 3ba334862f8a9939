#pragma once
/// @file
/// Where darkbert finds research data (GLUE, FrameNet, UD English EWT) and where it keeps what it derives
/// from it (an extracted FrameNet release, a trained annotator).
///
/// Data is looked up file by file in this order; the first folder that holds the file wins:
///   1. $DARKBERT_DATA                      a folder laid out like ../shared/data (glue/, framenet/, ud/)
///   2. `<checkout>/../shared/data`         beside the source checkout (`<checkout>` holds include/darkbert)
///   3. `<cache>/data`                      what examples/data/download.sh fetched
/// `<cache>` is $DARKBERT_CACHE, else $XDG_CACHE_HOME/darkbert, else $HOME/.cache/darkbert. Derived files
/// go to `<cache>` (never into the data folders, which may be read-only).
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// std::filesystem::path dev = root.find("glue/SST-2/dev.tsv", "GLUE SST-2 dev", darkbert::glue_hint);
/// @endcode
///
/// A missing file gives one error that names the file, every place looked (and why it did not count)
/// and how to get the data.

#include <fcntl.h>     // O_WRONLY, O_CREAT (tar's stderr file)
#include <spawn.h>     // posix_spawnp (runs tar to unpack an archive)
#include <sys/wait.h>  // waitpid, WIFEXITED, WEXITSTATUS
#include <unistd.h>    // getpid, environ

#include <cerrno>       // errno, EINTR
#include <cstdlib>      // std::getenv
#include <filesystem>   // std::filesystem::path, exists, rename, create_directories
#include <fstream>      // std::ifstream (tar's messages)
#include <functional>   // std::function
#include <iostream>     // std::clog
#include <optional>     // std::optional
#include <ostream>      // std::ostream
#include <sstream>      // std::ostringstream
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <system_error> // std::error_code
#include <vector>       // std::vector

#include "darkbert/core/error.hpp"
#include "darkbert/core/file_lock.hpp"

namespace darkbert {

/// Reads an environment variable; returns nullopt when it is unset or empty. Injectable for tests.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string&)>;

/// The EnvironmentLookup of the real process (std::getenv).
inline std::optional<std::string> process_environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

/// One place data may live, with a human-readable origin for error messages.
struct DataRootCandidate {
  std::string origin;               ///< e.g. "$DARKBERT_DATA", "beside the checkout", "per-user cache"
  std::filesystem::path path;       ///< empty when the origin is not configured (unset variable)
  std::string unset_reason;         ///< why path is empty, e.g. "not set"
};

namespace detail {

/// The checkout this header belongs to: DARKBERT_CHECKOUT_DIR if defined at compile time, else three
/// levels above this file (include/darkbert/data/root.hpp) when the compiler gave an absolute path.
inline std::optional<std::filesystem::path> checkout_dir() {
#ifdef DARKBERT_CHECKOUT_DIR
  return std::filesystem::path(DARKBERT_CHECKOUT_DIR);
#else
  const std::filesystem::path here(__FILE__);
  if (!here.is_absolute()) return std::nullopt;
  return here.parent_path().parent_path().parent_path().parent_path();
#endif
}

inline std::string describe_missing(const std::filesystem::path& folder, std::string_view relative) {
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) return "folder does not exist";
  if (!std::filesystem::is_directory(folder, ec)) return "not a folder";
  return "no " + std::string(relative) + " there";
}

}  // namespace detail

/// The per-user cache folder: $DARKBERT_CACHE, else $XDG_CACHE_HOME/darkbert, else $HOME/.cache/darkbert.
/// @code
/// auto models = darkbert::user_cache_dir() / "models";
/// @endcode
inline std::filesystem::path user_cache_dir(const EnvironmentLookup& env = process_environment) {
  if (auto dir = env("DARKBERT_CACHE")) return *dir;
  if (auto xdg = env("XDG_CACHE_HOME")) return std::filesystem::path(*xdg) / "darkbert";
  if (auto home = env("HOME")) return std::filesystem::path(*home) / ".cache" / "darkbert";
  fail("darkbert: cannot place the per-user cache: none of $DARKBERT_CACHE, $XDG_CACHE_HOME, $HOME is set");
}

/// An ordered list of folders holding research data, plus the cache folder for derived files.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();       // the documented order
/// auto root = darkbert::DataRoot::single("/data/research");  // exactly one folder (tests, scripts)
/// if (auto p = root.try_find("ud/en_ewt-ud-dev.conllu")) ...
/// @endcode
class DataRoot {
 public:
  /// A root over explicit candidate folders and cache (tests; use DataRoot::from_environment otherwise).
  DataRoot(std::vector<DataRootCandidate> candidates, std::filesystem::path cache)
      : candidates_(std::move(candidates)), cache_(std::move(cache)) {}

  /// $DARKBERT_DATA, then `<checkout>/../shared/data`, then `<cache>/data` (see the top of this header).
  static DataRoot from_environment(const EnvironmentLookup& env = process_environment) {
    std::vector<DataRootCandidate> list;
    if (auto dir = env("DARKBERT_DATA"))
      list.push_back({"$DARKBERT_DATA", *dir, ""});
    else
      list.push_back({"$DARKBERT_DATA", {}, "not set"});
    if (auto checkout = detail::checkout_dir())
      list.push_back({"beside the checkout", (*checkout / ".." / "shared" / "data").lexically_normal(), ""});
    else
      list.push_back({"beside the checkout", {}, "checkout folder unknown (header included by a relative path)"});
    const auto cache = user_cache_dir(env);
    list.push_back({"per-user cache", cache / "data", ""});
    return DataRoot(std::move(list), cache);
  }

  /// Exactly one data folder; the cache defaults to the per-user cache.
  static DataRoot single(std::filesystem::path folder, std::filesystem::path cache = {}) {
    if (cache.empty()) cache = user_cache_dir();
    return DataRoot({{"given folder", std::move(folder), ""}}, std::move(cache));
  }

  /// The folders searched, in order.
  const std::vector<DataRootCandidate>& candidates() const { return candidates_; }
  /// Where derived files go.
  const std::filesystem::path& cache_dir() const { return cache_; }

  /// The first candidate holding `relative` (a file or a folder), or nullopt.
  std::optional<std::filesystem::path> try_find(std::string_view relative) const {
    for (const auto& c : candidates_) {
      if (c.path.empty()) continue;
      std::error_code ec;
      auto p = c.path / relative;
      if (std::filesystem::exists(p, ec)) return p;
    }
    return std::nullopt;
  }

  /// Like try_find, but a miss throws an error naming `what`, every place looked and `how_to_get`.
  std::filesystem::path find(std::string_view relative, std::string_view what, std::string_view how_to_get) const {
    if (auto p = try_find(relative)) return *p;
    fail(not_found_message(relative, what, how_to_get));
  }

  /// The message find() throws; also used by readers that try several relative paths.
  std::string not_found_message(std::string_view relative, std::string_view what, std::string_view how_to_get) const {
    std::ostringstream out;
    out << "darkbert data: " << what << " not found (" << relative << "). Looked in:";
    int i = 1;
    for (const auto& c : candidates_) {
      out << "\n  " << i++ << ". " << c.origin << ": ";
      if (c.path.empty())
        out << "(" << c.unset_reason << ")";
      else
        out << c.path.string() << " -- " << detail::describe_missing(c.path, relative);
    }
    if (!how_to_get.empty()) out << "\nHow to get it: " << how_to_get;
    return out.str();
  }

 private:
  std::vector<DataRootCandidate> candidates_;
  std::filesystem::path cache_;
};

/// Where to get each data set (used in error messages and by examples/data/download.sh).
inline constexpr std::string_view glue_hint =
    "run examples/data/download.sh glue (GLUE from https://dl.fbaipublicfiles.com/glue/data/, MRPC from "
    "https://dl.fbaipublicfiles.com/senteval/senteval_data/) or set $DARKBERT_DATA to a folder with glue/<TASK>/";
/// How to get FrameNet, for error messages.
inline constexpr std::string_view framenet_hint =
    "run examples/data/download.sh framenet (FrameNet 1.7 as distributed by NLTK, "
    "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/framenet_v17.zip; the "
    "FrameNet project itself hands it out via https://framenet.icsi.berkeley.edu/) or set $DARKBERT_DATA";
/// How to get UD English EWT, for error messages.
inline constexpr std::string_view ud_hint =
    "run examples/data/download.sh ud (UD English EWT from "
    "https://github.com/UniversalDependencies/UD_English-EWT) or set $DARKBERT_DATA to a folder with ud/";

/// Unpacks a .tar.xz into `destination` once: if `destination` exists it is returned untouched; otherwise
/// the archive is unpacked (with the system `tar`) into a temporary sibling folder that is then renamed, so
/// an interrupted run never leaves a half-filled `destination`. Progress lines go to `log` (may be null).
///
/// @code
/// auto dir = darkbert::extract_once(archive, root.cache_dir() / "framenet" / "fndata-1.5-lu-frame");
/// @endcode
inline std::filesystem::path extract_once(const std::filesystem::path& archive,
                                          const std::filesystem::path& destination,
                                          std::ostream* log = &std::clog) {
  std::error_code ec;
  if (std::filesystem::is_directory(destination, ec)) return destination;
  require(std::filesystem::is_regular_file(archive, ec), archive.string(), ": archive not found");
  const auto parent = destination.parent_path();
  std::filesystem::create_directories(parent, ec);
  require(!ec, parent.string(), ": cannot create folder: ", ec.message());
  // Processes sharing the cache, and threads of one process, take turns: one unpacks, the others wait.
  const FileLock lock(std::filesystem::path(destination.string() + ".lock"));
  if (std::filesystem::is_directory(destination, ec)) return destination;  // unpacked while this one waited
  const auto staging = parent / (destination.filename().string() + ".partial-" + std::to_string(::getpid()));
  std::filesystem::remove_all(staging, ec);
  std::filesystem::create_directories(staging, ec);
  require(!ec, staging.string(), ": cannot create folder: ", ec.message());
  if (log != nullptr)
    *log << "darkbert: unpacking " << archive.string() << " into " << destination.string()
         << " (first use only; may take a minute)" << std::endl;

  const std::string a = archive.string(), s = staging.string();
  const std::string log_file = s + ".log";  // tar's complaints, quoted in the error message
  std::vector<char*> argv = {const_cast<char*>("tar"), const_cast<char*>("-xJf"), const_cast<char*>(a.c_str()),
                             const_cast<char*>("-C"), const_cast<char*>(s.c_str()), nullptr};
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 2, log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, "tar", &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    std::filesystem::remove_all(staging, ec);
    std::filesystem::remove(log_file, ec);
    fail(archive.string(), ": cannot run `tar` to unpack it (is tar with xz support installed?)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      status = -1;
      break;
    }
  }
  std::string complaints;
  {
    std::ifstream in(log_file);
    std::string line;
    while (std::getline(in, line)) complaints += (complaints.empty() ? "" : " / ") + line;
  }
  std::filesystem::remove(log_file, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove_all(staging, ec);
    fail(archive.string(), ": `tar -xJf` failed (exit status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         "): ", complaints.empty() ? std::string("no message") : complaints, "; nothing was left in ",
         parent.string());
  }
  std::filesystem::rename(staging, destination, ec);
  if (ec) {
    // Another process may have finished first; its copy is as good as ours.
    std::error_code ignore;
    std::filesystem::remove_all(staging, ignore);
    require(std::filesystem::is_directory(destination, ignore), destination.string(),
            ": cannot move the unpacked archive into place: ", ec.message());
  }
  if (log != nullptr) *log << "darkbert: unpacked " << destination.string() << std::endl;
  return destination;
}

}  // namespace darkbert
