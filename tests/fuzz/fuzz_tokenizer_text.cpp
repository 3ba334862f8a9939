// Fuzz target: arbitrary bytes through the real bert-base-uncased WordPiece (HF and Google flavours) and
// GPT-2 byte-level BPE tokenizers, as single texts and as pairs with truncation. Properties: every
// offset lies inside the text, GPT-2's decode gives the text back, and the O(n log n) BPE merge agrees
// with the reference one on every chunk.
#include <string>  // std::string

#include "../bpe_test_access.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto vocab = std::filesystem::path(DARKBERT_SHARED_DIR) / "data" / "vocab";
  static const Tokenizer bert = Tokenizer::from_directory(vocab / "bert-base-uncased");
  static const Tokenizer google = [] {
    TokenizerOptions o;
    o.flavour = BertFlavour::google;
    return Tokenizer::from_directory(vocab / "bert-base-uncased", o);
  }();
  static const Tokenizer gpt2 = Tokenizer::from_directory(vocab / "gpt2");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split_files(data, size, 2);
  for (const Tokenizer* t : {&bert, &google, &gpt2}) {
    try {
      const Encoding e = t->encode(text);
      for (std::size_t i = 0; i < e.size(); ++i)
        fuzz::check(e.offsets[i].begin <= e.offsets[i].end && e.offsets[i].end <= text.size(), "offsets inside the text");
      if (t == &gpt2) fuzz::check(gpt2.bpe()->decode(e.ids) == text, "GPT-2 decode(encode(text)) == text");
      const std::uint8_t knob = size > 0 ? data[0] : 0;
      const std::size_t max_length = knob % 16;
      t->encode_pair(parts[0], parts[1], {.max_length = max_length, .truncation = Truncation(knob / 16 % 4)});
    } catch (const error&) {  // invalid UTF-8, truncation that cannot be met
    }
  }
  // Differential: the heap merge against the reference passes, on the whole input as one chunk.
  auto a = detail::BpeTestAccess::symbols(*gpt2.bpe(), text.substr(0, 4096));
  auto b = a;
  detail::BpeTestAccess::merge_short(*gpt2.bpe(), a);
  detail::BpeTestAccess::merge_long(*gpt2.bpe(), b);
  fuzz::check(a == b, "merge_long == merge_short");
}
