#pragma once
/// @file
/// Reading and writing the safetensors format: an 8-byte little-endian header length N, N bytes of JSON
/// `{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`, then the data.
/// The file is memory-mapped; every header entry is validated before any tensor is handed out.
///
/// @code
/// darkbert::SafetensorsFile file("model.safetensors");
/// const auto& info = file.tensor("embeddings.word_embeddings.weight");   // dtype, shape
/// std::vector<float> values(info.numel());
/// file.read_as<float>(info.name, values.data());                            // F16/BF16 up-cast exactly
/// @endcode

#include <fcntl.h>     // open
#include <sys/mman.h>  // mmap, munmap
#include <sys/stat.h>  // stat, fstat, S_ISREG
#include <unistd.h>    // close

#include <algorithm>      // std::sort
#include <cerrno>         // errno
#include <cmath>          // std::isfinite
#include <cstdint>        // std::uint64_t
#include <cstring>        // std::memcpy
#include <filesystem>     // std::filesystem::path
#include <functional>     // std::multiplies
#include <map>            // std::map
#include <numeric>        // std::accumulate
#include <string>         // std::string
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::exchange
#include <vector>         // std::vector

#include <nlohmann/json.hpp>

#include "../core/atomic_file.hpp"
#include "../core/error.hpp"
#include "dtype.hpp"
#include "json.hpp"

namespace darkbert {

/// One entry of a safetensors header.
struct TensorInfo {
  std::string name;  ///<  as in the file, e.g. "encoder.layer.0.attention.self.query.weight"
  DType dtype = DType::F32;  ///<  element type
  std::vector<std::int64_t> shape;  ///<  dimensions, outermost first
  std::uint64_t begin = 0;  ///< byte offsets relative to the start of the data area
  std::uint64_t end = 0;  ///<  one past the last byte (end - begin = numel * dtype_size)

  /// Number of elements (1 for a scalar).
  std::int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  }
};

/// "[768, 3072]": a shape as error messages print it.
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

namespace detail {

/// Read-only memory map of a whole file; movable, unmapped on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::filesystem::path& path) {
    // Only regular files: opening a FIFO would block, and a device has no size to map.
    struct stat before {};
    if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) fail(path.string(), ": not a regular file");
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path.string(), ": cannot open (", std::strerror(errno), ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      fail(path.string(), ": cannot stat");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        fail(path.string(), ": cannot map ", size_, " bytes");
      }
      data_ = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept {
    if (this != &other) {
      unmap();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { unmap(); }

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void unmap() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
    data_ = nullptr;
  }
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail

/// A validated, memory-mapped safetensors file.
/// @code
/// darkbert::SafetensorsFile file("model.safetensors");
/// std::vector<float> w(file.tensor("pooler.dense.weight").numel());
/// file.read_as<float>("pooler.dense.weight", w.data());
/// @endcode
class SafetensorsFile {
 public:
  /// Largest header accepted; the reference implementation uses the same 100 MB bound.
  static constexpr std::uint64_t max_header_bytes = 100'000'000;

  /// Maps and validates the file (header, offsets, sizes); throws darkbert::error naming the problem.
  explicit SafetensorsFile(std::filesystem::path path) : path_(std::move(path)), map_(path_) { parse_header(); }

  /// The file.
  const std::filesystem::path& path() const { return path_; }
  /// Every tensor, in header order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The header's `__metadata__` strings.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// Whether the file holds `name`.
  bool contains(const std::string& name) const { return index_.count(name) != 0; }

  /// The entry of `name`; throws naming the file if absent.
  const TensorInfo& tensor(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) fail(path_.string(), ": no tensor named '", name, "'");
    return tensors_[it->second];
  }

  /// Raw little-endian bytes of a tensor (size = end - begin).
  const unsigned char* raw(const TensorInfo& info) const { return data_start_ + info.begin; }

  /// What read_as does with a NaN or infinite value: refuse it (the default) or pass it on.
  enum class NonFinite { reject, allow };
  /// Converts a floating tensor to T, writing numel() values to `out`. A NaN or infinite value is an error
  /// naming the tensor and the element (a checkpoint holding one would turn every output into NaN); pass
  /// NonFinite::allow to read such tensors anyway.
  template <class T>
  void read_as(const std::string& name, T* out, NonFinite non_finite = NonFinite::reject) const {
    const TensorInfo& info = tensor(name);
    if (!is_floating(info.dtype))
      fail(path_.string(), ": tensor '", name, "' has dtype ", dtype_name(info.dtype), ", expected a floating type");
    const unsigned char* bytes = raw(info);
    const auto n = static_cast<std::size_t>(info.numel());
    if ((info.dtype == DType::F32 && sizeof(T) == 4) || (info.dtype == DType::F64 && sizeof(T) == 8)) {
      if (n > 0) std::memcpy(out, bytes, n * sizeof(T));  // little-endian host, same type
    } else {
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::load_element<T>(bytes, info.dtype, i);
    }
    if (non_finite == NonFinite::allow) return;
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(out[i]))
        fail(path_.string(), ": tensor '", name, "' ", shape_string(info.shape), " holds ",
             std::isnan(out[i]) ? "NaN" : "an infinite value", " at flat index ", i,
             " (corrupt checkpoint, or saved after training diverged)");
  }

 private:
  void parse_header() {
    const std::string file = path_.string();
    const std::size_t size = map_.size();
    if (size < 8) fail(file, ": truncated safetensors file (", size, " bytes, the 8-byte header length is missing)");
    std::uint64_t header_len = 0;
    std::memcpy(&header_len, map_.data(), 8);
    if (header_len > max_header_bytes)
      fail(file, ": header length ", header_len, " exceeds the ", max_header_bytes, "-byte limit (corrupt file?)");
    if (header_len > size - 8)
      fail(file, ": header length ", header_len, " runs beyond the end of the file (", size - 8,
           " bytes after the length field)");
    const char* header_text = reinterpret_cast<const char*>(map_.data() + 8);
    // Strict: a repeated tensor name would otherwise let the last entry silently win.
    const nlohmann::json header = parse_json(std::string_view(header_text, header_len), file, "header JSON");
    if (!header.is_object()) fail(file, ": header JSON is not an object");
    data_start_ = map_.data() + 8 + header_len;
    const std::uint64_t data_size = size - 8 - header_len;

    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) fail(file, ": __metadata__ is not an object");
        for (const auto& [key, value] : entry.items()) {
          if (!value.is_string()) fail(file, ": __metadata__ value of \"", key, "\" is not a string");
          metadata_[key] = value.get<std::string>();
        }
        continue;
      }
      tensors_.push_back(parse_entry(file, name, entry, data_size));
    }
    // As in the reference reader, the tensors must tile the data area exactly: in offset order each one
    // starts where the previous one ended. This refuses overlaps (also one hidden behind a zero-size
    // tensor, which a pairwise neighbour test misses), gaps and trailing bytes.
    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](auto* a, auto* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
    std::uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo* t : by_offset) {
      if (t->begin < covered)
        fail(file, ": tensors '", previous->name, "' [", previous->begin, ", ", previous->end, ") and '", t->name,
             "' [", t->begin, ", ", t->end, ") have overlapping data_offsets");
      if (t->begin > covered)
        fail(file, ": ", t->begin - covered, " unused bytes before tensor '", t->name, "' (data_offsets [", t->begin,
             ", ", t->end, "]); the tensors must cover the data area without gaps");
      covered = t->end;
      previous = t;
    }
    if (covered != data_size)
      fail(file, ": ", data_size - covered, " bytes after the last tensor's data (", data_size,
           "-byte data area, tensors cover ", covered, "); truncated header or appended data?");
    for (std::size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
  }

  static TensorInfo parse_entry(const std::string& file, const std::string& name, const nlohmann::json& entry,
                                std::uint64_t data_size) {
    const std::string where = file + ": tensor '" + name + "'";
    if (!entry.is_object()) fail(where, ": header entry is not an object");
    TensorInfo info;
    info.name = name;
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) fail(where, ": missing or non-string \"dtype\"");
    const auto dtype = parse_dtype(entry["dtype"].get<std::string>());
    if (!dtype) fail(where, ": unknown dtype \"", entry["dtype"].get<std::string>(), "\"");
    info.dtype = *dtype;
    if (!entry.contains("shape") || !entry["shape"].is_array()) fail(where, ": missing or non-array \"shape\"");
    // The byte count is computed with overflow checks: a shape like [2^32, 2^32 + 1] would otherwise wrap
    // to a small product that matches a small byte range.
    std::uint64_t bytes = dtype_size(info.dtype);
    bool overflow = false;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<std::int64_t>() < 0))
        fail(where, ": shape has a non-integer or negative entry (", d.dump(), ")");
      const auto extent = json_integer<std::int64_t>(d, where + ": shape entry");
      overflow = overflow || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(extent), &bytes);
      info.shape.push_back(extent);
    }
    if (overflow)
      fail(where, ": shape ", shape_string(info.shape), " has more elements than any file can hold (the byte count ",
           "overflows 64 bits)");
    const auto& offsets = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail(where, ": \"data_offsets\" must be two non-negative integers");
    info.begin = offsets[0].get<std::uint64_t>();
    info.end = offsets[1].get<std::uint64_t>();
    if (info.begin > info.end) fail(where, ": data_offsets [", info.begin, ", ", info.end, "] are reversed");
    if (info.end > data_size)
      fail(where, ": data_offsets [", info.begin, ", ", info.end, "] run beyond the data area (", data_size,
           " bytes; truncated file?)");
    if (info.end - info.begin != bytes)
      fail(where, ": data_offsets span ", info.end - info.begin, " bytes but ", dtype_name(info.dtype), " ",
           shape_string(info.shape), " needs ", bytes);
    return info;
  }

  std::filesystem::path path_;
  detail::MappedFile map_;
  const unsigned char* data_start_ = nullptr;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

/// One tensor to write: name, dtype, shape and its little-endian bytes.
struct TensorBytes {
  DType dtype = DType::F32;  ///<  element type of `bytes`
  std::vector<std::int64_t> shape;  ///<  dimensions, outermost first
  std::vector<unsigned char> bytes;  ///<  little-endian elements, row-major
};

/// Writes a safetensors file (tensors in sorted name order, header padded to a multiple of 8, as the
/// reference writer does).
inline void write_safetensors(const std::filesystem::path& path, const std::map<std::string, TensorBytes>& tensors,
                              const std::map<std::string, std::string>& metadata = {{"format", "pt"}}) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    std::uint64_t expected = dtype_size(t.dtype);
    for (auto d : t.shape) {
      require(d >= 0, path.string(), ": tensor '", name, "' has a negative extent in ", shape_string(t.shape));
      expected *= static_cast<std::uint64_t>(d);
    }
    require(expected == t.bytes.size(), path.string(), ": tensor '", name, "' ", dtype_name(t.dtype), " ",
            shape_string(t.shape), " needs ", expected, " bytes, got ", t.bytes.size());
    header[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  AtomicFileWriter out(path);  // a crash or a full disk leaves the previous file intact
  const std::uint64_t len = text.size();
  out.write(&len, 8);
  out.write(text);
  for (const auto& [name, t] : tensors) out.write(t.bytes.data(), t.bytes.size());
  out.commit();
}

/// Packs floating values as a TensorBytes of the matching dtype (F32 for float, F64 for double).
template <class T>
TensorBytes tensor_bytes(const T* values, std::vector<std::int64_t> shape) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  TensorBytes t;
  t.dtype = std::is_same_v<T, float> ? DType::F32 : DType::F64;
  t.shape = std::move(shape);
  const auto n = static_cast<std::size_t>(
      std::accumulate(t.shape.begin(), t.shape.end(), std::int64_t{1}, std::multiplies<>()));
  t.bytes.resize(n * sizeof(T));
  std::memcpy(t.bytes.data(), values, t.bytes.size());
  return t;
}

}  // namespace darkbert
