#pragma once
// Shared fixtures of the test_study_* files: the data root over ../shared/data, the golden BERT and GPT-2
// models over the real vocabularies, and a PNG check for the figures the sections write.

#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <string>      // std::string
#include <utility>     // std::move

#include "darkbert/data/root.hpp"
#include "darkbert/model/transformer.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "test_support.hpp"

namespace darkbert::test {

// ../shared/data as the only data root.
inline DataRoot shared_root() { return DataRoot::single(data_dir()); }

// The golden BERT encoder over the real bert-base-uncased vocabulary.
inline Transformer<float> bert_fixture() {
  return Transformer<float>::load(golden_dir() / "models/bert_model_real_vocab");
}

inline Tokenizer bert_tokenizer() { return Tokenizer::from_directory(data_dir() / "vocab/bert-base-uncased"); }

// gpt2_lm (3 layers x 4 heads, causal) over the real GPT-2 vocabulary: id i reads embedding row i % 99.
inline Transformer<float> gpt2_fixture() {
  const auto base = Transformer<float>::load(golden_dir() / "models/gpt2_lm");
  auto config = base.config();
  auto params = base.params();
  const auto& word = base.params().embeddings.word;
  config.vocab_size = 50257;
  params.embeddings.word.resize(50257, word.cols());
  for (Index i = 0; i < 50257; ++i) params.embeddings.word.row(i) = word.row(i % word.rows());
  return Transformer<float>(config, std::move(params));
}

// Whether the file starts with the PNG signature.
inline bool is_png(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::string(magic + 1, 3) == "PNG";
}

}  // namespace darkbert::test
