#pragma once
// Reading a whole file with errors that name its role (tokenizers' vocabularies, logs a writer appends to).

#include <filesystem>  // std::filesystem::path, exists, is_directory
#include <fstream>     // std::ifstream
#include <iterator>    // std::istreambuf_iterator
#include <string>      // std::string

#include "../error.hpp"

namespace darkbert::detail {

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
