// Fuzz target: CoNLL-U text read, written and read again; what the writer produces from an accepted file
// must read back to the same text (the reader/writer pair round-trips UD EWT byte for byte).
#include <sstream>  // std::istringstream, std::ostringstream

#include "darkbert/data/conllu.hpp"
#include "darkbert/data/word_tokenizer.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)tokenize_words(text);  // the annotator's word tokenizer on the same bytes
  std::istringstream in(text);
  const auto sentences = read_conllu(in, "input.conllu");
  std::ostringstream once;
  write_conllu(once, sentences);
  std::istringstream again_in(once.str());
  const auto again = read_conllu(again_in, "written.conllu");
  std::ostringstream twice;
  write_conllu(twice, again);
  fuzz::check(once.str() == twice.str(), "write(read(write(read(x)))) == write(read(x))");
  for (const auto& s : sentences) (void)surface_tokens(s), (void)text_from_tokens(s);
}
