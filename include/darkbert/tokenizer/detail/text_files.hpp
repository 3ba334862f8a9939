#pragma once
// Helpers shared by the tokenizer models: reading a vocabulary file (core/detail/text_file.hpp) and
// string-keyed maps (core/string_map.hpp).

#include "darkbert/core/detail/text_file.hpp"  // read_text_file
#include "darkbert/core/string_map.hpp"

namespace darkbert::detail {

using darkbert::StringHash;
using darkbert::StringMap;

}  // namespace darkbert::detail
