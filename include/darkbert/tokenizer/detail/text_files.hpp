#pragma once
// Helpers shared by the tokenizer models: reading a vocabulary file (string-keyed maps: core/string_map.hpp).

#include <cstddef>        // std::size_t
#include <filesystem>     // std::filesystem::path, exists
#include <fstream>        // std::ifstream
#include <functional>     // std::hash, std::equal_to
#include <iterator>       // std::istreambuf_iterator
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map

#include "darkbert/core/error.hpp"
#include "darkbert/core/string_map.hpp"

namespace darkbert::detail {

using darkbert::StringHash;
using darkbert::StringMap;

// The whole file as bytes; `what` names the file's role in the error ("vocab file", "merges file").
inline std::string read_text_file(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(what, " '", path.string(), "' does not exist");
  if (std::filesystem::is_directory(path, ec)) fail(what, " '", path.string(), "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", what, " '", path.string(), "'");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("error while reading ", what, " '", path.string(), "'");
  return data;
}

}  // namespace darkbert::detail
