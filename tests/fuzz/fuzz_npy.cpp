// Fuzz target: .npy bytes read as float32 and float64 (validated header, no over-allocation), and the
// writer/reader round trip: an array built from the input is written crash-safely and read back bit for bit.
#include <cstring>  // std::memcpy

#include "darkbert/io/npy.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("npy");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int as_double = 0; as_double < 2; ++as_double) {
    try {
      if (as_double) (void)read_npy_bytes<double>(bytes, "input.npy");
      else (void)read_npy_bytes<float>(bytes, "input.npy");
    } catch (const error&) {
    }
  }
  // Round trip: shape from the first bytes (up to 3 dimensions), values from the rest.
  if (size < 3) return;
  const std::size_t rank = data[0] % 4;
  std::vector<std::size_t> shape;
  std::size_t count = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    shape.push_back(data[1 + k % 2] % 5);
    count *= shape.back();
  }
  xt::xarray<double> a = xt::xarray<double>::from_shape(shape);
  for (std::size_t i = 0; i < count; ++i) {
    double v = 0;
    const std::size_t at = 3 + 8 * i;
    if (at + 8 <= size) std::memcpy(&v, data + at, 8);
    a.data()[i] = v;
  }
  // Through a file (crash-safe writer, fsync included) for one input in 64, in memory otherwise.
  xt::xarray<double> back;
  if (data[0] / 4 % 64 == 0) {
    write_npy(dir / "a.npy", a);
    back = read_npy<double>(dir / "a.npy");
  } else {
    back = read_npy_bytes<double>(npy_bytes(a), "round trip");
  }
  fuzz::check(back.shape() == a.shape(), "shape round-trips");
  fuzz::check(count == 0 || std::memcmp(back.data(), a.data(), count * sizeof(double)) == 0, "values round-trip bit for bit");
}
