#pragma once
/// @file
/// A pretraining corpus in BERT's layout — one sentence per line, a blank line between documents (as
/// ../shared/data/corpus/*.txt and Google's create_pretraining_data input) — tokenised once into one flat
/// array of ids with sentence and document boundaries.
///
/// @code
/// auto corpus = darkbert::tokenize_corpus("corpus/train.txt", tokenizer);
/// corpus.documents();                  // 1068
/// std::span<const int> s = corpus.sentence(corpus.first_sentence(3));   // first sentence of document 3
/// @endcode
///
/// Sentences are tokenised without special tokens, in parallel (the tokenizer's const methods are
/// thread-safe); the result does not depend on the thread count.

#include <cstdint>     // std::int64_t
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <span>        // std::span
#include <string>      // std::string
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../core/progress.hpp"
#include "../tokenizer/tokenizer.hpp"

namespace darkbert {

/// A corpus as one flat array of token ids with sentence and document boundaries.
struct TokenizedCorpus {
  std::vector<int> tokens;                    ///< every sentence's ids, concatenated
  std::vector<std::int64_t> sentence_starts;  ///< [sentences + 1] offsets into tokens
  std::vector<std::int64_t> document_starts;  ///< [documents + 1] offsets into sentences

  /// Number of documents.
  std::size_t documents() const { return document_starts.empty() ? 0 : document_starts.size() - 1; }
  /// Number of sentences.
  std::size_t sentences() const { return sentence_starts.empty() ? 0 : sentence_starts.size() - 1; }
  /// Index of the first sentence of `document`.
  std::int64_t first_sentence(std::size_t document) const { return document_starts[document]; }
  /// One past the last sentence of `document`.
  std::int64_t end_sentence(std::size_t document) const { return document_starts[document + 1]; }
  /// The ids of sentence `s`.
  std::span<const int> sentence(std::int64_t s) const {
    const auto u = static_cast<std::size_t>(s);
    return {tokens.data() + sentence_starts[u], static_cast<std::size_t>(sentence_starts[u + 1] - sentence_starts[u])};
  }
  /// The ids of a whole document, sentences back to back.
  std::span<const int> document(std::size_t d) const {
    const auto a = sentence_starts[static_cast<std::size_t>(first_sentence(d))];
    const auto b = sentence_starts[static_cast<std::size_t>(end_sentence(d))];
    return {tokens.data() + a, static_cast<std::size_t>(b - a)};
  }
};

/// What tokenize_corpus reads.
struct CorpusOptions {
  std::size_t max_documents = 0;  ///< read only the first N documents (0 = all)
  bool show_progress = false;  ///< a progress bar on stderr
};

/// Reads and tokenises `path`. Lines that tokenise to nothing are dropped; documents left without a
/// sentence are dropped. A file without any sentence is an error naming it.
inline TokenizedCorpus tokenize_corpus(const std::filesystem::path& path, const Tokenizer& tokenizer,
                                       const CorpusOptions& options = {}) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), path.string(), ": cannot open the corpus for reading");
  // Pass 1: the lines, grouped into documents.
  std::vector<std::string> lines;
  std::vector<std::size_t> doc_first_line = {0};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (doc_first_line.back() != lines.size()) {
        if (options.max_documents && doc_first_line.size() == options.max_documents) break;
        doc_first_line.push_back(lines.size());
      }
      continue;
    }
    lines.push_back(std::move(line));
  }
  require(in.eof() || !in.fail(), path.string(), ": read error");
  if (doc_first_line.back() != lines.size()) doc_first_line.push_back(lines.size());
  require(!lines.empty(), path.string(), ": the corpus has no sentences (expected one sentence per line, a blank "
                                         "line between documents)");
  // Pass 2: tokenise every line (in parallel; each line's ids land in its own slot).
  std::vector<std::vector<int>> ids(lines.size());
  Progress progress("tokenize " + path.filename().string(), static_cast<long>(lines.size()), options.show_progress);
  constexpr long chunk = 1024;
  const long n = static_cast<long>(lines.size());
  for (long first = 0; first < n; first += chunk) {
    const long last = std::min(n, first + chunk);
#pragma omp parallel for schedule(dynamic, 16)
    for (long i = first; i < last; ++i)
      ids[static_cast<std::size_t>(i)] = tokenizer.encode(lines[static_cast<std::size_t>(i)], {.add_special_tokens = false}).ids;
    progress.advance(last - first);
  }
  progress.finish();
  // Pass 3: flatten.
  TokenizedCorpus corpus;
  corpus.sentence_starts.push_back(0);
  corpus.document_starts.push_back(0);
  for (std::size_t d = 0; d + 1 < doc_first_line.size(); ++d) {
    const auto before = corpus.sentences();
    for (std::size_t l = doc_first_line[d]; l < doc_first_line[d + 1]; ++l) {
      if (ids[l].empty()) continue;
      corpus.tokens.insert(corpus.tokens.end(), ids[l].begin(), ids[l].end());
      corpus.sentence_starts.push_back(static_cast<std::int64_t>(corpus.tokens.size()));
    }
    if (corpus.sentences() != before) corpus.document_starts.push_back(static_cast<std::int64_t>(corpus.sentences()));
  }
  require(corpus.sentences() > 0, path.string(), ": no line of the corpus produced a token");
  return corpus;
}

}  // namespace darkbert
