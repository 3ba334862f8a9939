#pragma once
/// @file
/// A Hugging Face checkpoint folder: config.json plus either model.safetensors or a sharded
/// model.safetensors.index.json (`{"metadata": {...}, "weight_map": {name: shard file}}`).
///
/// @code
/// darkbert::CheckpointFolder ckpt("bert-base-uncased/");
/// for (const auto& name : ckpt.tensor_names()) ...
/// ckpt.read_as<float>("embeddings.word_embeddings.weight", buffer);
/// @endcode

#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <map>         // std::map
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "json.hpp"
#include "safetensors.hpp"

namespace darkbert {

namespace detail {

/// A shard named by the index must stay inside the checkpoint folder: a relative path without "..", so a
/// downloaded index cannot make darkbert open /etc/passwd or ../../other-model. (Symbolic links inside the
/// folder are followed, as in the Hugging Face cache, whose snapshot files link to ../../blobs.)
inline std::filesystem::path confined_shard_path(const std::filesystem::path& dir, const std::string& shard,
                                                 const std::filesystem::path& index, const std::string& tensor) {
  const std::filesystem::path rel(shard);
  auto refuse = [&](const char* why) {
    fail(index.string(), ": weight_map entry '", tensor, "' names shard \"", shard, "\", which ", why,
         "; shards must be files inside the checkpoint folder");
  };
  if (shard.empty()) refuse("is empty");
  if (shard.find('\0') != std::string::npos) refuse("contains a NUL byte");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) refuse("is an absolute path");
  for (const auto& part : rel)
    if (part == "..") refuse("leaves the folder through \"..\"");
  if (rel.filename().empty() || rel.filename() == ".") refuse("is not a file name");
  return dir / rel;
}

}  // namespace detail

/// The tensors of a checkpoint folder, single-file or sharded, looked up by name (example at the top).
class CheckpointFolder {
 public:
  /// Opens `dir`: model.safetensors, else the shards listed in model.safetensors.index.json; throws naming
  /// the file when neither is valid.
  explicit CheckpointFolder(std::filesystem::path dir) : dir_(std::move(dir)) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(dir_)) fail(dir_.string(), ": not a directory (expected a checkpoint folder)");
    const auto single = dir_ / "model.safetensors";
    const auto index = dir_ / "model.safetensors.index.json";
    if (fs::exists(single)) {
      add_file(single);
      for (const auto& t : files_.back()->tensors()) where_[t.name] = 0;
    } else if (fs::exists(index)) {
      const auto json = read_json_file(index);
      if (!json.contains("weight_map") || !json["weight_map"].is_object())
        fail(index.string(), ": no \"weight_map\" object");
      std::map<std::string, std::size_t> shard_of_file;
      for (const auto& [name, shard] : json["weight_map"].items()) {
        if (!shard.is_string()) fail(index.string(), ": weight_map entry '", name, "' is not a file name");
        const auto file = shard.get<std::string>();
        auto it = shard_of_file.find(file);
        if (it == shard_of_file.end()) {
          add_file(detail::confined_shard_path(dir_, file, index, name));
          it = shard_of_file.emplace(file, files_.size() - 1).first;
        }
        if (!files_[it->second]->contains(name))
          fail(index.string(), ": weight_map puts '", name, "' in ", file, ", which has no such tensor");
        where_[name] = it->second;
      }
    } else if (fs::exists(dir_ / "pytorch_model.bin")) {
      fail(dir_.string(), ": only pytorch_model.bin found; darkbert reads safetensors (convert with "
           "transformers' save_pretrained(safe_serialization=True))");
    } else {
      fail(dir_.string(), ": neither model.safetensors nor model.safetensors.index.json found");
    }
  }

  /// The folder.
  const std::filesystem::path& directory() const { return dir_; }

  /// Every tensor name, over all shards, sorted.
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> names;
    for (const auto& [name, file] : where_) names.push_back(name);
    return names;
  }
  /// Whether any shard holds `name`.
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  /// dtype, shape and byte range of `name`; throws if absent.
  const TensorInfo& info(const std::string& name) const { return file_of(name).tensor(name); }
  /// The shard holding `name`; throws if absent.
  const SafetensorsFile& file_of(const std::string& name) const {
    const auto it = where_.find(name);
    if (it == where_.end()) fail(dir_.string(), ": checkpoint has no tensor '", name, "'");
    return *files_[it->second];
  }
  /// Converts a floating tensor to T; NaN or infinite values are an error naming the file and tensor
  /// unless `non_finite` is NonFinite::allow (see SafetensorsFile::read_as).
  template <class T>
  void read_as(const std::string& name, T* out,
               SafetensorsFile::NonFinite non_finite = SafetensorsFile::NonFinite::reject) const {
    file_of(name).template read_as<T>(name, out, non_finite);
  }

  /// Number of values stored over all tensors: an upper bound on what a model built from this folder can
  /// read, used to refuse a config.json that asks for more before allocating it.
  std::uint64_t stored_elements() const {
    std::uint64_t n = 0;
    for (const auto& [name, file] : where_) n += static_cast<std::uint64_t>(files_[file]->tensor(name).numel());
    return n;
  }

 private:
  void add_file(const std::filesystem::path& path) { files_.push_back(std::make_unique<SafetensorsFile>(path)); }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::size_t> where_;  ///< tensor name -> index into files_
};

}  // namespace darkbert
