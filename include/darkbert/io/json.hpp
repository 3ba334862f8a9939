#pragma once
// Strict JSON for files that come from elsewhere (config.json, safetensors headers, shard indexes, cases
// files, vocab.json). nlohmann::json alone accepts inputs that would be read wrongly without a word:
//  - a key repeated in one object (the last one silently wins),
//  - nesting deep enough to overflow the stack of any recursive walk over the document,
//  - numbers coerced by get<int>(): true -> 1, 2.9 -> 2, 2^32 + 2 -> 2.
// parse_json refuses the first two, json_integer the third; errors name the source and the key.
//
//   const auto j = darkbert::parse_json(text, "config.json");
//   const int layers = darkbert::json_integer<int>(j["num_hidden_layers"], "config.json: \"num_hidden_layers\"");

#include <cstdint>        // std::int64_t, std::uint64_t
#include <filesystem>     // std::filesystem::path
#include <fstream>        // std::ifstream
#include <iterator>       // std::istreambuf_iterator
#include <limits>         // std::numeric_limits
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_set>  // std::unordered_set
#include <vector>         // std::vector

#include <nlohmann/json.hpp>

#include "../core/error.hpp"

namespace darkbert {

// Deepest nesting of objects and arrays accepted; real files in these formats nest at most 4 levels.
inline constexpr int max_json_depth = 64;

// Parses `text`; `source` names it in errors ("config.json"), `what` says what it holds ("header JSON"):
//   "config.json: malformed JSON: parse error at line 3, column 6: syntax error ...";
// with what = "" the message is "config.json: parse error at line 3, ...".
inline nlohmann::json parse_json(std::string_view text, const std::string& source, const char* what = "JSON") {
  using event = nlohmann::json::parse_event_t;
  std::vector<std::unordered_set<std::string>> keys;  // the keys seen in each open object
  int depth = 0;
  auto check = [&](int, event e, nlohmann::json& parsed) -> bool {
    switch (e) {
      case event::object_start:
      case event::array_start:
        if (++depth > max_json_depth) fail(source, ": JSON nested deeper than ", max_json_depth, " levels");
        if (e == event::object_start) keys.emplace_back();
        break;
      case event::object_end:
      case event::array_end:
        --depth;
        if (e == event::object_end && !keys.empty()) keys.pop_back();
        break;
      case event::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          fail(source, ": duplicate key \"", parsed.get<std::string>(), "\" in one JSON object");
        break;
      case event::value:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    std::string message = e.what();  // drop nlohmann's "[json.exception.parse_error.101] " tag
    const auto close = message.find("] ");
    if (message.rfind("[json.exception", 0) == 0 && close != std::string::npos) message.erase(0, close + 2);
    if (*what) fail(source, ": malformed ", what, ": ", message);
    fail(source, ": ", message);
  }
}

// Reads and parses a JSON file strictly, with errors that name it.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path.string(), ": read error");
  return parse_json(text, path.string());
}

// A JSON integer as Int, refusing booleans, fractions ("2.9", also "2.0") and values outside Int's range.
// `where` names the field: "config.json: field \"n_layer\"".
template <class Int>
Int json_integer(const nlohmann::json& value, const std::string& where) {
  using limits = std::numeric_limits<Int>;
  if (!value.is_number_integer()) fail(where, " must be an integer, got ", value.dump());
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(limits::max())) fail(where, " = ", v, " is out of range (at most ", limits::max(), ")");
    return static_cast<Int>(v);
  }
  const auto v = value.get<std::int64_t>();
  if (v < static_cast<std::int64_t>(limits::min()) ||
      (v > 0 && static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(limits::max())))
    fail(where, " = ", v, " is out of range [", +limits::min(), ", ", +limits::max(), "]");
  return static_cast<Int>(v);
}

}  // namespace darkbert
