#pragma once
/// @file
/// Hash maps keyed by std::string that can be searched with a std::string_view, without building a
/// std::string per lookup (vocabularies, feature tables).

#include <cstddef>        // std::size_t
#include <functional>     // std::hash, std::equal_to
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map

namespace darkbert {

/// Transparent string hash: lets StringMap::find take a std::string_view.
struct StringHash {
  using is_transparent = void;  ///< enables find(std::string_view)
  /// Hash of the characters (same for std::string and std::string_view).
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

/// `StringMap<int> ids; ids.find(std::string_view(piece));` — no std::string built per lookup.
template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace darkbert
