#pragma once
/// @file
/// The one exception type darkbert throws. Messages name the file, tensor or line and say what is wrong:
/// @code
/// throw darkbert::error("model.safetensors: tensor 'pooler.dense.weight': data_offsets [10, 4] are reversed");
/// @endcode

#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::runtime_error
#include <string>     // std::string

namespace darkbert {

class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Builds a message from streamable parts: fail("file.tsv:", line, ": expected 4 fields, got ", n).
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw error(out.str());
}

/// Like assert, but always on and with a readable message.
template <class... Parts>
void require(bool condition, const Parts&... parts) {
  if (!condition) fail(parts...);
}

}  // namespace darkbert
