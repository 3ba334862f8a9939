// Fuzz target: tokenizer folders with fuzzed vocabularies. An input starting with '{' is a byte-level BPE
// folder (vocab.json, merges.txt, text), anything else a WordPiece one (vocab.txt, text); the files are
// joined by fuzz_support's separator. The text is then encoded single and as a pair.
#include "darkbert/tokenizer/tokenizer.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("vocab");
  const bool bpe = size > 0 && data[0] == '{';
  const auto files = fuzz::split_files(data, size, bpe ? 3 : 2);
  std::filesystem::remove(dir / "vocab.txt");
  std::filesystem::remove(dir / "vocab.json");
  std::filesystem::remove(dir / "merges.txt");
  if (bpe) {
    fuzz::put(dir / "vocab.json", files[0]);
    fuzz::put(dir / "merges.txt", files[1]);
  } else {
    fuzz::put(dir / "vocab.txt", files[0]);
  }
  const Tokenizer tok = Tokenizer::from_directory(dir);
  const std::string_view text = files.back();
  const Encoding e = tok.encode(text);
  for (std::size_t i = 0; i < e.size(); ++i) {
    fuzz::check(e.offsets[i].begin <= e.offsets[i].end && e.offsets[i].end <= text.size(), "offsets inside the text");
    fuzz::check(e.ids[i] >= 0, "ids are non-negative");
  }
  tok.encode_pair(text, text.substr(text.size() / 2), {.max_length = text.size() % 13, .truncation = Truncation::longest_first});
}
