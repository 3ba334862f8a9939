#pragma once
/// @file
/// A resumable training checkpoint: the model (a Hugging Face folder any loader reads), the optimizer's
/// moments and the loop's own state (step, data position, ...) as JSON, in one folder that is replaced
/// atomically:
///
/// @code
/// `<dir>.tmp`/   everything is written here first and flushed to disk,
/// `<dir>/`       then the old folder is renamed to `<dir>.old`, `<dir>.tmp` to `<dir>`, and `<dir>.old` removed.
/// @endcode
///
/// A kill at any moment leaves either the previous checkpoint or the new one: load_training_checkpoint
/// takes `<dir>`, else `<dir>.old` (a kill between the two renames), and ignores a half-written `<dir>.tmp`.
///
/// @code
/// darkbert::save_training_checkpoint(out / "checkpoint", model, optimizer, {{"step", 400}});
/// auto [model, state] = darkbert::load_training_checkpoint<float>(out / "checkpoint");
/// darkbert::AdamW<float> optimizer(model);
/// darkbert::restore_optimizer(out / "checkpoint", optimizer);
/// @endcode

#include <fcntl.h>   // ::open
#include <unistd.h>  // ::fsync, ::close

#include <filesystem>  // std::filesystem
#include <optional>    // std::optional
#include <string>      // std::string
#include <utility>     // std::pair

#include <nlohmann/json.hpp>

#include "../core/atomic_file.hpp"  // write_file_atomically
#include "../core/error.hpp"
#include "../io/checkpoint.hpp"  // read_json_file
#include "../io/safetensors.hpp"
#include "../model/transformer.hpp"
#include "optimizer.hpp"

namespace darkbert {

namespace detail {
/// Flushes a file or folder to disk, so that a rename after it never exposes unwritten data.
inline void sync_path(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path.string(), ": cannot open to flush it to disk");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(path.string(), ": flushing to disk failed");
}

inline std::filesystem::path sibling(const std::filesystem::path& dir, const char* suffix) {
  auto p = dir;
  p += suffix;
  return p;
}
}  // namespace detail

/// The folder a checkpoint lives in after a possible kill: `<dir>`, else `<dir>.old`; nullopt if neither.
inline std::optional<std::filesystem::path> find_training_checkpoint(const std::filesystem::path& dir) {
  for (const auto& candidate : {dir, detail::sibling(dir, ".old")})
    if (std::filesystem::exists(candidate / "state.json")) return candidate;
  return std::nullopt;
}

/// Writes model, optimizer moments and `state` to `dir`, replacing an older checkpoint atomically.
template <class T>
void save_training_checkpoint(const std::filesystem::path& dir, const Transformer<T>& model, AdamW<T>& optimizer,
                              const nlohmann::json& state) {
  namespace fs = std::filesystem;
  const auto tmp = detail::sibling(dir, ".tmp"), old = detail::sibling(dir, ".old");
  fs::remove_all(tmp);
  model.save(tmp);
  write_safetensors(tmp / "optimizer.safetensors",
                    {{"exp_avg", tensor_bytes(optimizer.first_moments().data(), {static_cast<std::int64_t>(optimizer.first_moments().size())})},
                     {"exp_avg_sq", tensor_bytes(optimizer.second_moments().data(), {static_cast<std::int64_t>(optimizer.second_moments().size())})}},
                    {{"format", "darkbert"}, {"optimizer", "AdamW"}, {"steps", std::to_string(optimizer.steps())}});
  write_file_atomically(tmp / "state.json", state.dump(2) + "\n");
  for (const auto& entry : fs::directory_iterator(tmp)) detail::sync_path(entry.path());
  detail::sync_path(tmp);
  if (fs::exists(dir)) {
    fs::remove_all(old);
    fs::rename(dir, old);
  }
  fs::rename(tmp, dir);
  detail::sync_path(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  fs::remove_all(old);
}

/// The model and the loop state of the checkpoint at `dir` (or its .old twin after a kill).
template <class T>
std::pair<Transformer<T>, nlohmann::json> load_training_checkpoint(const std::filesystem::path& dir) {
  const auto found = find_training_checkpoint(dir);
  if (!found) fail(dir.string(), ": no training checkpoint here (state.json missing)");
  return {Transformer<T>::load(*found), read_json_file(*found / "state.json")};
}

/// Restores the optimizer's moments and step count saved beside the model.
template <class T>
void restore_optimizer(const std::filesystem::path& dir, AdamW<T>& optimizer) {
  const auto found = find_training_checkpoint(dir);
  if (!found) fail(dir.string(), ": no training checkpoint here (state.json missing)");
  const SafetensorsFile file(*found / "optimizer.safetensors");
  for (auto [name, values] : {std::pair{"exp_avg", &optimizer.first_moments()}, {"exp_avg_sq", &optimizer.second_moments()}}) {
    const auto& info = file.tensor(name);
    if (info.numel() != static_cast<std::int64_t>(values->size()))
      fail(file.path().string(), ": '", name, "' has ", info.numel(), " values, the optimizer needs ", values->size(),
           " (a checkpoint of another model?)");
    file.read_as<T>(name, values->data());
  }
  const auto& meta = file.metadata();
  const auto it = meta.find("steps");
  if (it == meta.end()) fail(file.path().string(), ": metadata lacks the optimizer's step count");
  optimizer.set_steps(std::stoll(it->second));
}

}  // namespace darkbert
