#pragma once
/// @file
/// GPT-2's pretraining examples: the corpus as one token stream, documents joined by <|endoftext|> (as
/// OpenAI's and Hugging Face's run_clm do), cut into windows of max_length tokens with no padding. The last
/// partial window is dropped.
///
/// @code
/// auto windows = darkbert::TokenWindows::from_corpus(corpus, tokenizer.pad_id() /* <|endoftext|> */, 128);
/// darkbert::CausalLmBatch cb;
/// darkbert::make_causal_lm_batch(windows, indices, cb);   // labels = the ids; task_loss shifts them
/// @endcode

#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <vector>   // std::vector

#include "../core/error.hpp"
#include "../data/pretraining_corpus.hpp"
#include "../model/batch.hpp"
#include "task_loss.hpp"  // TaskLabels

namespace darkbert {

/// The token stream cut into windows of `length` tokens.
struct TokenWindows {
  std::vector<int> stream;  ///< documents back to back, each followed by <|endoftext|>
  std::size_t length = 0;   ///< tokens per window

  /// Whole windows in the stream.
  std::size_t count() const { return length ? stream.size() / length : 0; }
  /// The ids of window i.
  std::span<const int> window(std::size_t i) const { return {stream.data() + i * length, length}; }

  /// The windows of a tokenised corpus, documents joined by `end_of_text`.
  static TokenWindows from_corpus(const TokenizedCorpus& corpus, int end_of_text, std::size_t length) {
    require(length >= 2, "TokenWindows: windows need at least 2 tokens, got ", length);
    TokenWindows w;
    w.length = length;
    w.stream.reserve(corpus.tokens.size() + corpus.documents());
    for (std::size_t d = 0; d < corpus.documents(); ++d) {
      const auto doc = corpus.document(d);
      w.stream.insert(w.stream.end(), doc.begin(), doc.end());
      w.stream.push_back(end_of_text);
    }
    require(w.count() > 0, "TokenWindows: the corpus has ", w.stream.size(), " tokens, fewer than one window of ", length);
    return w;
  }
};

/// One causal-LM batch: ids [B, L] (no padding) and the same ids as labels (task_loss shifts them).
struct CausalLmBatch {
  Batch batch;             ///< ids [B, L], all real
  TaskLabels labels;       ///< labels.tokens = the ids
  Index real_tokens = 0;   ///< B·L
};

/// The windows at `indices` as one batch, into `out` (its buffers are reused).
inline void make_causal_lm_batch(const TokenWindows& windows, std::span<const std::size_t> indices, CausalLmBatch& out) {
  require(!indices.empty(), "make_causal_lm_batch: no examples");
  const auto L = static_cast<Index>(windows.length);
  out.batch.batch_size = static_cast<Index>(indices.size());
  out.batch.length = L;
  out.batch.input_ids.clear();
  for (std::size_t i : indices) {
    require(i < windows.count(), "make_causal_lm_batch: window ", i, " is out of range (", windows.count(), ")");
    const auto w = windows.window(i);
    out.batch.input_ids.insert(out.batch.input_ids.end(), w.begin(), w.end());
  }
  out.batch.attention_mask.assign(out.batch.input_ids.size(), 1);
  out.batch.token_type_ids.clear();
  out.labels = TaskLabels{};
  out.labels.tokens = out.batch.input_ids;
  out.real_tokens = out.batch.batch_size * L;
}

}  // namespace darkbert
