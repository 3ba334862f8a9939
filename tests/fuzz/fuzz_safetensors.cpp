// Fuzz target: one safetensors file (header + data), then every floating tensor read as float and double.
#include <vector>  // std::vector

#include "darkbert/io/safetensors.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("safetensors");
  const auto path = dir / "model.safetensors";
  fuzz::put(path, {reinterpret_cast<const char*>(data), size});
  SafetensorsFile file(path);
  std::uint64_t bytes = 0;
  for (const auto& t : file.tensors()) {
    bytes += t.end - t.begin;
    fuzz::check(t.end >= t.begin && t.end - t.begin == static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype),
                "accepted tensor's byte range matches its shape");
    if (!is_floating(t.dtype)) continue;
    std::vector<float> f(static_cast<std::size_t>(t.numel()));
    std::vector<double> d(f.size());
    try {
      file.read_as<float>(t.name, f.data());
    } catch (const error&) {  // NaN / Inf values
    }
    file.read_as<double>(t.name, d.data(), SafetensorsFile::NonFinite::allow);
  }
  fuzz::check(bytes <= size, "accepted tensors fit in the file");
}
