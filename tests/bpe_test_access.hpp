#pragma once
// Test access to the byte-level BPE's two merge loops (BpeTokenizer befriends detail::BpeTestAccess):
// the heap loop for long words must give exactly what the quadratic loop gives for short ones. Used by
// tests/test_io_limits.cpp and the fuzz target tests/fuzz/fuzz_tokenizer_text.cpp.
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/tokenizer/bpe.hpp"

namespace darkbert::detail {
struct BpeTestAccess {
  // The word's bytes as initial symbols.
  static std::vector<int> symbols(const BpeTokenizer& t, std::string_view bytes) {
    std::vector<int> s;
    for (unsigned char b : bytes) s.push_back(t.byte_symbol_[b]);
    return s;
  }
  static void merge_short(const BpeTokenizer& t, std::vector<int>& s) { t.merge_short(s); }
  static void merge_long(const BpeTokenizer& t, std::vector<int>& s) { t.merge_long(s); }
};
}  // namespace darkbert::detail
