// Fuzz target: a sharded checkpoint folder — model.safetensors.index.json and two shards, joined by
// fuzz_support's file separator — opened as a CheckpointFolder, every tensor read.
#include <vector>  // std::vector

#include "darkbert/io/checkpoint.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto root = fuzz::scratch("index");
  const auto dir = root / "ckpt";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto files = fuzz::split_files(data, size, 3);
  fuzz::put(dir / "model.safetensors.index.json", files[0]);
  fuzz::put(dir / "model-00001-of-00002.safetensors", files[1]);
  fuzz::put(dir / "model-00002-of-00002.safetensors", files[2]);
  fuzz::put(root / "outside.safetensors", files[1]);  // a shard path leaving the folder must never reach it
  CheckpointFolder ckpt(dir);
  for (const auto& name : ckpt.tensor_names()) {
    const auto& info = ckpt.info(name);
    fuzz::check(ckpt.file_of(name).path().parent_path() == dir, "shards stay inside the folder");
    if (!is_floating(info.dtype)) continue;
    std::vector<double> values(static_cast<std::size_t>(info.numel()));
    ckpt.read_as<double>(name, values.data(), SafetensorsFile::NonFinite::allow);
  }
  (void)ckpt.stored_elements();
}
