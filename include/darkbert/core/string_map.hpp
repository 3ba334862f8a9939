#pragma once
// Hash maps keyed by std::string that can be searched with a std::string_view, without building a
// std::string per lookup (vocabularies, feature tables).

#include <cstddef>        // std::size_t
#include <functional>     // std::hash, std::equal_to
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map

namespace darkbert {

struct StringHash {
  using is_transparent = void;  // enables find(std::string_view)
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace darkbert
