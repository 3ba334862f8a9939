#pragma once
/// @file
/// BERT's pretraining examples, in the spirit of Google's create_pretraining_data.py:
///  * segment pairs: from each document, whole sentences are gathered until the target length (the full
/// @code
///  max_length - 3, or with probability short_seq_prob a random shorter one), split at a random sentence
///  into A and B; with probability 0.5 (always when there is one sentence) B is replaced by sentences from
///  a random other document and the unused tail of A's document is put back. The longer side is trimmed
///  (front or back at random) until [CLS] A [SEP] B [SEP] fits.
/// @endcode
///  * masking: round(15%) of the non-special tokens (at least 1, at most max_predictions); of those 80%
/// @code
///  become [MASK], 10% a random token, 10% stay. Drawn per example from (seed, example key), so a batch
///  is the same whatever came before it — which is what makes resuming exact.
/// @endcode
///
/// @code
/// auto pairs = darkbert::make_segment_pairs(corpus, {.max_length = 128}, seed);
/// darkbert::MaskedLmBatch mb;
/// darkbert::make_masked_lm_batch(pairs, indices, specials, {}, mask_seed, mb);
/// model.forward_into(mb.batch, {.logit_positions = mb.positions, .training = &pass}, out);
/// @endcode

#include <algorithm>  // std::min, std::max, std::swap
#include <cmath>      // std::lround
#include <cstdint>    // std::uint64_t
#include <random>     // std::mt19937_64
#include <span>       // std::span
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "../core/counter_rng.hpp"    // mix64
#include "../core/error.hpp"
#include "../data/pretraining_corpus.hpp"
#include "../data/seeded_shuffle.hpp"  // uniform_below
#include "../model/batch.hpp"
#include "../kernels/loss.hpp"      // ignore_index
#include "task_loss.hpp"              // TaskLabels

namespace darkbert {

/// One NSP example: segment A, segment B (token ids, no special tokens).
struct SegmentPair {
  std::vector<int> a;  ///< sentences of one document
  std::vector<int> b;  ///< A's continuation, or sentences of another document
  bool random_next = false;  ///< B is not A's continuation (NSP label 1)
};

/// How segment pairs are built.
struct SegmentPairOptions {
  int max_length = 128;          ///< [CLS] A [SEP] B [SEP] fits in this many tokens
  double short_seq_prob = 0.1;   ///< share of pairs built to a random shorter length
  double random_next_prob = 0.5;  ///< share of pairs whose B comes from another document
};

/// The special ids masking needs.
struct MaskedLmVocabulary {
  int cls = -1;   ///< [CLS]
  int sep = -1;   ///< [SEP]
  int mask = -1;  ///< [MASK]
  int pad = 0;    ///< [PAD]
  int size = 0;  ///< random replacements are drawn from [0, size)
};

/// How many tokens are masked.
struct MaskingOptions {
  double mask_prob = 0.15;   ///< share of the non-special tokens
  int max_predictions = 20;  ///< per example (Google's setting for 128 tokens)
};

/// One batch: ids [B, L] padded to the longest pair, the MLM targets at the masked positions (ignore_index
/// elsewhere), NSP labels, and the (row, position) pairs whose logits the loss needs.
struct MaskedLmBatch {
  Batch batch;                                     ///< ids [B, L] after masking, token types, mask
  TaskLabels labels;                               ///< tokens (original ids at masked positions), next_sentence
  std::vector<std::pair<Index, Index>> positions;  ///< the masked (row, position) pairs, in order
  Index real_tokens = 0;  ///< non-padding tokens (throughput counts these)
};

namespace detail {
inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
}  // namespace detail

/// All segment pairs of one pass over the corpus, documents in order (shuffle the indices to train).
inline std::vector<SegmentPair> make_segment_pairs(const TokenizedCorpus& corpus, const SegmentPairOptions& o,
                                                   std::uint64_t seed) {
  require(o.max_length >= 8, "make_segment_pairs: max_length must be at least 8, got ", o.max_length);
  require(corpus.documents() >= 2, "make_segment_pairs: next-sentence pairs need at least 2 documents, the corpus has ",
          corpus.documents());
  std::mt19937_64 rng(seed);
  const std::size_t max_tokens = static_cast<std::size_t>(o.max_length - 3);
  std::vector<SegmentPair> pairs;
  for (std::size_t d = 0; d < corpus.documents(); ++d) {
    std::size_t target = max_tokens;
    if (detail::uniform01(rng) < o.short_seq_prob) target = 2 + uniform_below(rng, max_tokens - 1);
    std::vector<std::int64_t> chunk;  // sentence indices
    std::size_t length = 0;
    for (std::int64_t s = corpus.first_sentence(d); s < corpus.end_sentence(d); ++s) {
      chunk.push_back(s);
      length += corpus.sentence(s).size();
      if (s + 1 != corpus.end_sentence(d) && length < target) continue;
      SegmentPair pair;
      const std::size_t a_end = chunk.size() >= 2 ? 1 + uniform_below(rng, chunk.size() - 1) : 1;
      for (std::size_t k = 0; k < a_end; ++k) {
        const auto t = corpus.sentence(chunk[k]);
        pair.a.insert(pair.a.end(), t.begin(), t.end());
      }
      if (chunk.size() == 1 || detail::uniform01(rng) < o.random_next_prob) {
        pair.random_next = true;
        const std::size_t b_target = target > pair.a.size() ? target - pair.a.size() : 1;
        std::size_t other = uniform_below(rng, corpus.documents() - 1);
        if (other >= d) ++other;  // any document but this one
        const auto first = corpus.first_sentence(other), count = corpus.end_sentence(other) - first;
        for (auto r = first + static_cast<std::int64_t>(uniform_below(rng, static_cast<std::size_t>(count)));
             r < corpus.end_sentence(other) && pair.b.size() < b_target; ++r) {
          const auto t = corpus.sentence(r);
          pair.b.insert(pair.b.end(), t.begin(), t.end());
        }
        s -= static_cast<std::int64_t>(chunk.size() - a_end);  // the sentences B did not use come back
      } else {
        for (std::size_t k = a_end; k < chunk.size(); ++k) {
          const auto t = corpus.sentence(chunk[k]);
          pair.b.insert(pair.b.end(), t.begin(), t.end());
        }
      }
      // Trim the longer side, from the front or the back at random, until the pair fits.
      while (pair.a.size() + pair.b.size() > max_tokens) {
        auto& longer = pair.a.size() > pair.b.size() ? pair.a : pair.b;
        if (detail::uniform01(rng) < 0.5) longer.erase(longer.begin());
        else longer.pop_back();
      }
      if (!pair.a.empty() && !pair.b.empty()) pairs.push_back(std::move(pair));
      chunk.clear();
      length = 0;
      target = max_tokens;
      if (detail::uniform01(rng) < o.short_seq_prob) target = 2 + uniform_below(rng, max_tokens - 1);
    }
  }
  require(!pairs.empty(), "make_segment_pairs: the corpus gave no segment pair");
  return pairs;
}

/// The examples pairs[indices[r]] as one masked-LM + NSP batch. Example r is masked with the stream
/// (mask_seed, keys[r]): give each example of a run its own key (e.g. its position in the run).
inline void make_masked_lm_batch(const std::vector<SegmentPair>& pairs, std::span<const std::size_t> indices,
                                 std::span<const std::uint64_t> keys, const MaskedLmVocabulary& v,
                                 const MaskingOptions& o, std::uint64_t mask_seed, MaskedLmBatch& out) {
  require(!indices.empty() && keys.size() == indices.size(), "make_masked_lm_batch: need one key per example");
  require(v.cls >= 0 && v.sep >= 0 && v.mask >= 0 && v.size > 0, "make_masked_lm_batch: the vocabulary lacks [CLS], [SEP] or [MASK]");
  std::vector<std::vector<int>> ids, types;
  for (std::size_t i : indices) {
    require(i < pairs.size(), "make_masked_lm_batch: example ", i, " is out of range (", pairs.size(), " pairs)");
    const auto& p = pairs[i];
    std::vector<int> row = {v.cls}, type = {0};
    row.insert(row.end(), p.a.begin(), p.a.end());
    row.push_back(v.sep);
    type.resize(row.size(), 0);
    row.insert(row.end(), p.b.begin(), p.b.end());
    row.push_back(v.sep);
    type.resize(row.size(), 1);
    ids.push_back(std::move(row));
    types.push_back(std::move(type));
  }
  out.batch = Batch::from_rows(ids, v.pad, types);
  const Index B = out.batch.batch_size, L = out.batch.length;
  out.labels.tokens.assign(static_cast<std::size_t>(B * L), kernels::ignore_index);
  out.labels.next_sentence.clear();
  out.labels.classes.clear();
  out.labels.values.clear();
  out.positions.clear();
  out.real_tokens = 0;
  std::vector<Index> candidates;
  for (Index r = 0; r < B; ++r) {
    const auto& row = ids[static_cast<std::size_t>(r)];
    out.real_tokens += static_cast<Index>(row.size());
    out.labels.next_sentence.push_back(pairs[indices[static_cast<std::size_t>(r)]].random_next ? 1 : 0);
    candidates.clear();
    for (std::size_t i = 0; i < row.size(); ++i)
      if (row[i] != v.cls && row[i] != v.sep) candidates.push_back(static_cast<Index>(i));
    std::mt19937_64 rng(mix64(mask_seed ^ mix64(keys[static_cast<std::size_t>(r)] + 0x51ed2701f3a5c7b9ULL)));
    const auto wanted = static_cast<std::size_t>(std::max<long>(1, std::lround(o.mask_prob * static_cast<double>(candidates.size()))));
    const std::size_t n = std::min({wanted, candidates.size(), static_cast<std::size_t>(o.max_predictions)});
    // A partial Fisher-Yates shuffle picks n positions, then they are taken in position order.
    for (std::size_t k = 0; k < n; ++k) std::swap(candidates[k], candidates[k + uniform_below(rng, candidates.size() - k)]);
    std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t k = 0; k < n; ++k) {
      const Index i = candidates[k];
      const auto at = static_cast<std::size_t>(r * L + i);
      out.labels.tokens[at] = out.batch.input_ids[at];
      out.positions.emplace_back(r, i);
      const double u = detail::uniform01(rng);
      if (u < 0.8) out.batch.input_ids[at] = v.mask;
      else if (u < 0.9) out.batch.input_ids[at] = static_cast<int>(uniform_below(rng, static_cast<std::size_t>(v.size)));
    }
  }
}

}  // namespace darkbert
