#pragma once
/// @file
/// Element types found in checkpoints, and exact conversion of stored values to float/double.

#include <cstdint>      // std::uint16_t, std::uint32_t
#include <cstring>      // std::memcpy
#include <optional>     // std::optional
#include <string_view>  // std::string_view

namespace darkbert {

/// A safetensors element type.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

/// safetensors spells dtypes "F32", "BF16", ... ; returns nullopt for anything else.
inline std::optional<DType> parse_dtype(std::string_view name) {
  constexpr std::pair<std::string_view, DType> table[] = {
      {"F64", DType::F64}, {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64}, {"I32", DType::I32}, {"I16", DType::I16}, {"I8", DType::I8},
      {"U8", DType::U8},   {"BOOL", DType::BOOL}};
  for (const auto& [spelling, dtype] : table)
    if (spelling == name) return dtype;
  return std::nullopt;
}

/// The safetensors spelling: `dtype_name(DType::BF16)` is "BF16".
inline const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64: return "F64";
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I16: return "I16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::BOOL: return "BOOL";
  }
  return "?";
}

/// Bytes per element.
inline std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: return 2;
    case DType::I8: case DType::U8: case DType::BOOL: return 1;
  }
  return 0;
}

/// Whether the type is F64, F32, F16 or BF16 (the ones read_as converts).
inline bool is_floating(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

namespace detail {

inline float bits_to_float(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// IEEE binary16 -> binary32, exact for every input (subnormals, infinities, NaN payloads).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);  // signed zero
    // Subnormal: shift until the implicit bit appears, adjusting the exponent.
    exponent = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ffu;
    return bits_to_float(sign | (exponent << 23) | (mantissa << 13));
  }
  return bits_to_float(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

/// bfloat16 is the upper half of a binary32.
inline float bfloat16_to_float(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

/// Reads element i of a little-endian buffer of the given dtype as T (floating targets only).
template <class T>
T load_element(const unsigned char* data, DType dtype, std::size_t i) {
  switch (dtype) {
    case DType::F64: { double v; std::memcpy(&v, data + 8 * i, 8); return static_cast<T>(v); }
    case DType::F32: { float v; std::memcpy(&v, data + 4 * i, 4); return static_cast<T>(v); }
    case DType::F16: { std::uint16_t v; std::memcpy(&v, data + 2 * i, 2); return static_cast<T>(half_to_float(v)); }
    case DType::BF16: { std::uint16_t v; std::memcpy(&v, data + 2 * i, 2); return static_cast<T>(bfloat16_to_float(v)); }
    case DType::I64: { std::int64_t v; std::memcpy(&v, data + 8 * i, 8); return static_cast<T>(v); }
    case DType::I32: { std::int32_t v; std::memcpy(&v, data + 4 * i, 4); return static_cast<T>(v); }
    case DType::I16: { std::int16_t v; std::memcpy(&v, data + 2 * i, 2); return static_cast<T>(v); }
    case DType::I8: return static_cast<T>(static_cast<std::int8_t>(data[i]));
    case DType::U8: case DType::BOOL: return static_cast<T>(data[i]);
  }
  return T{};
}

}  // namespace detail
}  // namespace darkbert
