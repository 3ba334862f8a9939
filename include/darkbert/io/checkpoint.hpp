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

#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <map>         // std::map
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "safetensors.hpp"

namespace darkbert {

/// Reads a JSON file, with errors that name it.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) fail(path.string(), ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(path.string(), ": malformed JSON: ", e.what());
  }
}

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
          add_file(dir_ / file);
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
  /// Converts tensor `name` to T (float or double) into out[0, numel).
  template <class T>
  void read_as(const std::string& name, T* out) const {
    file_of(name).template read_as<T>(name, out);
  }

 private:
  void add_file(const std::filesystem::path& path) { files_.push_back(std::make_unique<SafetensorsFile>(path)); }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::size_t> where_;  ///< tensor name -> index into files_
};

}  // namespace darkbert
