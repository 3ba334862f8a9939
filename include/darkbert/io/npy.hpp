#pragma once
// NumPy .npy files: darkbert's outputs and the golden fixtures' expected values. Writing is crash-safe
// (core/atomic_file.hpp); reading validates the header before allocating: the magic string, the
// version, a little-endian float32/float64 dtype, C order, a shape whose byte count does not overflow and
// equals the bytes that follow. Errors name the file:
//   "expected/x.npy: shape (1000000, 1000000) needs 8000000000000 bytes of <f8, the file has 96".
//
//   darkbert::write_npy("out/attentions.npy", attentions);        // any xtensor expression of float/double
//   xt::xarray<double> expected = darkbert::read_npy<double>("expected/case.attentions.npy");

#include <algorithm>    // std::max
#include <cstdint>      // std::uint16_t, std::uint32_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <filesystem>   // std::filesystem::path
#include <fstream>      // std::ifstream
#include <iterator>     // std::istreambuf_iterator
#include <limits>       // std::numeric_limits
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>  // xt::dump_npy

#include "../core/atomic_file.hpp"
#include "../core/error.hpp"

namespace darkbert {

// The .npy bytes of an array (xtensor's writer: C order, little-endian, version 1.0 header).
template <class E>
std::string npy_bytes(const E& array) {
  return xt::dump_npy(array);
}

// Writes an array as .npy, replacing `path` only once the whole file is written.
template <class E>
void write_npy(const std::filesystem::path& path, const E& array) {
  write_file_atomically(path, npy_bytes(array));
}

namespace detail {

// Header dictionary of a .npy file: {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

// The value text after `'key':` in the header dictionary, up to (not including) its terminator.
inline std::string_view npy_field(std::string_view dict, std::string_view key, const std::string& source) {
  const std::string quoted = "'" + std::string(key) + "'";
  const auto at = dict.find(quoted);
  if (at == std::string_view::npos) fail(source, ": .npy header has no '", key, "' entry");
  if (dict.find(quoted, at + 1) != std::string_view::npos) fail(source, ": .npy header gives '", key, "' twice");
  std::size_t p = at + quoted.size();
  while (p < dict.size() && dict[p] == ' ') ++p;
  if (p >= dict.size() || dict[p] != ':') fail(source, ": .npy header: no ':' after '", key, "'");
  ++p;
  while (p < dict.size() && dict[p] == ' ') ++p;
  std::size_t end = p;
  if (p < dict.size() && dict[p] == '(') {
    end = dict.find(')', p);
    if (end == std::string_view::npos) fail(source, ": .npy header: unterminated shape");
    return dict.substr(p, end + 1 - p);
  }
  if (p < dict.size() && dict[p] == '\'') {
    end = dict.find('\'', p + 1);
    if (end == std::string_view::npos) fail(source, ": .npy header: unterminated string for '", key, "'");
    return dict.substr(p + 1, end - p - 1);
  }
  while (end < dict.size() && dict[end] != ',' && dict[end] != '}') ++end;
  return dict.substr(p, end - p);
}

inline NpyHeader parse_npy_header(std::string_view dict, const std::string& source) {
  NpyHeader h;
  h.descr = std::string(npy_field(dict, "descr", source));
  const auto order = npy_field(dict, "fortran_order", source);
  if (order == "True") h.fortran_order = true;
  else if (order != "False") fail(source, ": .npy header: fortran_order is '", order, "', expected True or False");
  const auto shape = npy_field(dict, "shape", source);
  if (shape.size() < 2 || shape.front() != '(') fail(source, ": .npy header: shape is not a tuple");
  std::size_t p = 1;
  while (p + 1 < shape.size()) {
    while (p + 1 < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p + 1 >= shape.size()) break;
    std::uint64_t extent = 0;
    std::size_t digits = 0;
    for (; p + 1 < shape.size() && shape[p] >= '0' && shape[p] <= '9'; ++p, ++digits) {
      if (digits >= 18) fail(source, ": .npy header: shape extent too large");
      extent = extent * 10 + static_cast<std::uint64_t>(shape[p] - '0');
    }
    if (digits == 0) fail(source, ": .npy header: shape ", shape, " holds something other than integers");
    if (p + 1 < shape.size() && shape[p] == 'L') ++p;  // Python 2 long
    if (p + 1 < shape.size() && shape[p] != ',' && shape[p] != ' ')
      fail(source, ": .npy header: shape ", shape, " is malformed");
    if (h.shape.size() >= 32) fail(source, ": .npy header: more than 32 dimensions");
    h.shape.push_back(static_cast<std::size_t>(extent));
  }
  return h;
}

}  // namespace detail

// Reads a float32 or float64 .npy file (little-endian, C order) as T.
template <class T>
xt::xarray<T> read_npy_bytes(std::string_view bytes, const std::string& source) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  constexpr std::string_view magic("\x93NUMPY", 6);
  if (bytes.size() < 10 || bytes.substr(0, 6) != magic) fail(source, ": not a .npy file (magic string missing)");
  const unsigned major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    std::uint16_t len;
    std::memcpy(&len, bytes.data() + 8, 2);
    header_len = len;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(source, ": truncated .npy header");
    std::uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    start = 12;
  } else {
    fail(source, ": .npy version ", major, " is not supported (1, 2 or 3)");
  }
  if (header_len > bytes.size() - start)
    fail(source, ": .npy header length ", header_len, " runs beyond the end of the file");
  const auto header = detail::parse_npy_header(bytes.substr(start, header_len), source);
  if (header.fortran_order) fail(source, ": Fortran-order .npy arrays are not supported (save with C order)");
  std::size_t element = 0;
  bool is_double = false;
  if (header.descr == "<f8" || (header.descr == "=f8")) element = 8, is_double = true;
  else if (header.descr == "<f4" || header.descr == "=f4") element = 4;
  else fail(source, ": .npy dtype '", header.descr, "' is not supported (little-endian float32 or float64)");
  std::uint64_t count = 1, need = element;
  // The strides of the array (products of trailing dimensions) must fit in a signed 64-bit index even when
  // a zero dimension makes the array empty: (0, 2^42, 2^44) holds no bytes, but xtensor computes its
  // strides from the other dimensions (found by fuzz_npy).
  std::int64_t extent = 1;
  bool overflow = false;
  for (auto d : header.shape) {
    overflow = overflow || __builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count);
    overflow = overflow || __builtin_mul_overflow(need, static_cast<std::uint64_t>(d), &need);
    overflow = overflow || d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
               __builtin_mul_overflow(extent, std::max<std::int64_t>(1, static_cast<std::int64_t>(d)), &extent);
  }
  std::string shape_text = "(";
  for (std::size_t i = 0; i < header.shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(header.shape[i]);
  shape_text += ")";
  const std::size_t have = bytes.size() - start - header_len;
  if (overflow) fail(source, ": .npy shape ", shape_text, " overflows 64 bits");
  if (need != have)
    fail(source, ": .npy shape ", shape_text, " needs ", need, " bytes of ", header.descr, ", the file has ", have);
  xt::xarray<T> out = xt::xarray<T>::from_shape(header.shape);
  const char* data = bytes.data() + start + header_len;
  for (std::size_t i = 0; i < count; ++i) {
    if (is_double) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      out.data()[i] = static_cast<T>(v);
    } else {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      out.data()[i] = static_cast<T>(v);
    }
  }
  return out;
}

template <class T>
xt::xarray<T> read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path.string(), ": read error");
  return read_npy_bytes<T>(bytes, path.string());
}

}  // namespace darkbert
