#pragma once
/// @file
/// What a pretraining run trains on and how it is scored, for both families:
/// @code
/// BERT   masked LM + next-sentence prediction on segment pairs (masked_lm_data.hpp);
///        held-out: masked-token accuracy and mean cross-entropy on the first 512 pairs of the held-out
///        corpus, masked with a fixed seed (as the PyTorch reference in notes/pretraining-reference.md).
/// GPT-2  causal LM on <|endoftext|>-joined windows (causal_lm_data.hpp);
///        held-out: next-token accuracy and mean cross-entropy (perplexity = exp) on the first 256 windows.
///        Training may predict only a seeded share of the positions (predicted_fraction): at small widths
///        the 50,257-way head is most of a step's FLOPs, and the loss over a random subset of positions
///        is an unbiased estimate of the loss over all of them. Or it may compute the head over a sampled
///        candidate vocabulary at every position (softmax_draws; sampled_softmax.hpp).
/// @endcode
/// An "epoch" is one pass over the training examples in a seeded order; BERT's segment pairs and masks are
/// drawn afresh each epoch (dynamic masking). Batch k of an epoch depends only on (seed, epoch, length, k),
/// so a run can be resumed from (epoch, offset) exactly. Training examples can be asked for at a length
/// shorter than max_length (BERT's own recipe trains most steps on short sequences); held-out scores are
/// always at max_length.
///
/// @code
/// PretrainingTask task(Family::bert, train_corpus, heldout_corpus, tokenizer, {.max_length = 128}, seed);
/// auto b = task.batch(epoch, offset, 32);      // b.batch, b.labels, b.positions (max_length tokens)
/// auto s = task.batch(epoch, offset, 64, 32);  // the same from an epoch of 32-token examples
/// auto score = task.evaluate(model);           // score.loss, score.accuracy
/// @endcode

#include <algorithm>  // std::min
#include <cmath>      // std::log, std::exp
#include <cstdint>    // std::uint64_t
#include <optional>   // std::optional
#include <vector>     // std::vector

#include "../core/counter_rng.hpp"  // mix64, counter_uniform
#include "../core/error.hpp"
#include "../data/pretraining_corpus.hpp"
#include "../data/seeded_shuffle.hpp"
#include "../kernels/loss.hpp"  // log_sum_exp
#include "../model/transformer.hpp"
#include "../tokenizer/tokenizer.hpp"
#include "causal_lm_data.hpp"
#include "masked_lm_data.hpp"
#include "sampled_softmax.hpp"

namespace darkbert {

/// Sizes of the training and held-out examples.
struct PretrainingTaskOptions {
  int max_length = 128;                ///< tokens per sequence
  std::size_t heldout_pairs = 512;    ///< BERT held-out segment pairs
  std::size_t heldout_windows = 256;  ///< GPT-2 held-out windows
  std::uint64_t heldout_seed = 12345; ///< fixed: every run is scored on the same masks
  MaskingOptions masking;              ///< BERT's training masks (the held-out masks are always the default 15%)
  double predicted_fraction = 1;       ///< GPT-2: share of training positions whose next token is predicted
                                       ///< (1 = all, as Hugging Face); held-out scores always predict all
  Index softmax_draws = 0;  ///< GPT-2: sampled softmax with this many draws per step (0 = the full softmax, as
                            ///< Hugging Face; sampled_softmax.hpp); held-out scores always use the full softmax
};

/// A training batch (views into the task's buffers, valid until the next call).
struct PretrainingBatch {
  const Batch& batch;        ///< the inputs
  const TaskLabels& labels;  ///< the targets (with candidates: their columns, not vocabulary ids)
  const std::vector<std::pair<Index, Index>>& positions;  ///< LM logit positions: BERT's masked tokens;
                                                         ///< GPT-2's predicted ones (empty = all)
  Index real_tokens;  ///< non-padding tokens
  const SampledCandidates* candidates = nullptr;  ///< GPT-2's sampled softmax: the step's decoder columns
};

/// A held-out evaluation.
struct HeldoutScore {
  double loss = 0;      ///< mean cross-entropy over the scored tokens
  double accuracy = 0;  ///< share of scored tokens predicted exactly (argmax)
  double next_sentence_accuracy = -1;  ///< BERT NSP on the held-out pairs; -1 for GPT-2
  Index tokens = 0;     ///< tokens scored
};

/// Training batches and held-out scoring of one family's pretraining objective.
class PretrainingTask {
 public:
  /// `train` and `heldout` must outlive the task; `seed` draws the pairs, their order and the masks.
  PretrainingTask(Family family, const TokenizedCorpus& train, const TokenizedCorpus& heldout, const Tokenizer& tokenizer,
                  const PretrainingTaskOptions& options, std::uint64_t seed)
      : masked_(family != Family::gpt2), train_(train), options_(options), seed_(seed) {
    require(options.predicted_fraction > 0 && options.predicted_fraction <= 1,
            "pretraining: predicted_fraction must be in (0, 1], got ", options.predicted_fraction);
    require(options.softmax_draws >= 0, "pretraining: softmax_draws must be 0 (full softmax) or positive, got ",
            options.softmax_draws);
    require(options.softmax_draws == 0 || family == Family::gpt2,
            "pretraining: softmax_draws (sampled softmax) is for GPT-2's causal LM only");
    if (masked_) {
      const auto special = tokenizer.special_tokens();
      require(special.cls && special.sep && special.mask, "pretraining: the tokenizer has no [CLS], [SEP] or [MASK] token");
      vocab_ = {.cls = *special.cls, .sep = *special.sep, .mask = *special.mask, .pad = tokenizer.pad_id(),
                .size = static_cast<int>(tokenizer.vocab_size())};
      auto pairs = make_segment_pairs(heldout, {.max_length = options.max_length}, options.heldout_seed);
      pairs.resize(std::min(pairs.size(), options.heldout_pairs));
      heldout_pairs_ = std::move(pairs);
    } else {
      end_of_text_ = tokenizer.pad_id();
      train_windows_ = TokenWindows::from_corpus(train, end_of_text_, static_cast<std::size_t>(options.max_length));
      heldout_windows_ = TokenWindows::from_corpus(heldout, end_of_text_, static_cast<std::size_t>(options.max_length));
      heldout_windows_.stream.resize(std::min(heldout_windows_.count(), options.heldout_windows) * heldout_windows_.length);
      if (options.softmax_draws > 0) {
        std::vector<std::int64_t> counts(tokenizer.vocab_size(), 0);
        for (const int id : train_windows_.stream) {
          require(id >= 0 && static_cast<std::size_t>(id) < counts.size(), "pretraining: token id ", id,
                  " outside the tokenizer's vocabulary of ", counts.size());
          ++counts[static_cast<std::size_t>(id)];
        }
        sampler_.emplace(counts, options.softmax_draws);
      }
    }
  }

  /// BERT's masked LM (true) or GPT-2's causal LM.
  bool masked() const { return masked_; }

  /// Tokens per example of the held-out data and, unless asked otherwise, of the training batches.
  int max_length() const { return options_.max_length; }

  /// Training examples in `epoch` at `length` tokens (0 = max_length; BERT: segment pairs drawn for that
  /// epoch; GPT-2: windows).
  std::size_t examples(std::int64_t epoch, int length = 0) {
    prepare(epoch, length);
    return order_.size();
  }

  /// Examples [offset, offset + count) of `epoch` at `length` tokens (0 = max_length), in its seeded order.
  PretrainingBatch batch(std::int64_t epoch, std::size_t offset, std::size_t count, int length = 0) {
    prepare(epoch, length);
    require(offset + count <= order_.size(), "pretraining: batch [", offset, ", ", offset + count,
            ") is past the end of epoch ", epoch, " (", order_.size(), " examples)");
    const std::span<const std::size_t> rows(order_.data() + offset, count);
    if (!masked_) {
      make_causal_lm_batch(train_windows_, rows, causal_);
      if (options_.predicted_fraction < 1) choose_predicted_positions(epoch, offset);
      const auto& positions = options_.predicted_fraction < 1 ? predicted_ : no_positions_;
      if (!sampler_) return {causal_.batch, causal_.labels, positions, causal_.real_tokens};
      // Every token of the batch is a candidate (a superset of the targets), so the labels map one to one.
      sampler_->draw(causal_.labels.tokens,
                     mix64(seed_ ^ 0x73616d70ULL) ^ mix64((static_cast<std::uint64_t>(epoch) << 32) + offset), candidates_);
      sampled_labels_.tokens = candidates_.targets;
      return {causal_.batch, sampled_labels_, positions, causal_.real_tokens, &candidates_};
    }
    keys_.clear();
    for (std::size_t r = 0; r < count; ++r) keys_.push_back((static_cast<std::uint64_t>(epoch) << 32) + offset + r);
    make_masked_lm_batch(pairs_, rows, keys_, vocab_, options_.masking, mix64(seed_ ^ 0x6d61736bULL), masked_lm_);
    return {masked_lm_.batch, masked_lm_.labels, masked_lm_.positions, masked_lm_.real_tokens};
  }

  /// Held-out score of `model` (inference: no dropout).
  template <class T>
  HeldoutScore evaluate(const Transformer<T>& model, std::size_t batch_size = 16) const {
    HeldoutScore score;
    double loss = 0, correct = 0, nsp_correct = 0, nsp_total = 0;
    ForwardOptions<T> options;
    options.keep_attentions = false;
    options.keep_hidden_states = false;
    ForwardResult<T> out;
    const std::size_t n = masked_ ? heldout_pairs_.size() : heldout_windows_.count();
    std::vector<std::size_t> rows;
    std::vector<std::uint64_t> keys;
    MaskedLmBatch mb;
    CausalLmBatch cb;
    for (std::size_t first = 0; first < n; first += batch_size) {
      rows.clear();
      keys.clear();
      for (std::size_t i = first; i < std::min(n, first + batch_size); ++i) {
        rows.push_back(i);
        keys.push_back(i);
      }
      const std::vector<int>* targets = nullptr;
      const Batch* batch = nullptr;
      if (masked_) {
        make_masked_lm_batch(heldout_pairs_, rows, keys, vocab_, {}, options_.heldout_seed, mb);
        options.logit_positions = mb.positions;
        batch = &mb.batch;
        targets = &mb.labels.tokens;
      } else {
        make_causal_lm_batch(heldout_windows_, rows, cb);
        options.token_logits = true;
        batch = &cb.batch;
        targets = &cb.labels.tokens;
      }
      model.forward_into(*batch, options, out);
      const Index L = batch->length;
      // Scores one logit row against its target.
      auto add = [&](const T* logits, Index V, int target) {
        Index best = 0;
        T top = logits[0];
        for (Index v = 1; v < V; ++v)
          if (logits[v] > top) top = logits[best = v];
        loss += static_cast<double>(kernels::log_sum_exp(logits, V)) - static_cast<double>(logits[target]);
        correct += best == target;
        ++score.tokens;
      };
      if (masked_) {
        const Index V = static_cast<Index>(out.selected_logits.shape()[1]);
        for (std::size_t r = 0; r < mb.positions.size(); ++r) {
          const auto [b, i] = mb.positions[r];
          add(out.selected_logits.data() + static_cast<Index>(r) * V, V, (*targets)[static_cast<std::size_t>(b * L + i)]);
        }
        if (out.next_sentence_logits.size() > 0)
          for (std::size_t b = 0; b < rows.size(); ++b) {
            const int predicted = out.next_sentence_logits(b, 1) > out.next_sentence_logits(b, 0) ? 1 : 0;
            nsp_correct += predicted == mb.labels.next_sentence[b];
            ++nsp_total;
          }
      } else {
        const Index V = static_cast<Index>(out.token_logits.shape()[2]);
        for (Index b = 0; b < batch->batch_size; ++b)
          for (Index i = 0; i + 1 < L; ++i)
            add(out.token_logits.data() + (b * L + i) * V, V, (*targets)[static_cast<std::size_t>(b * L + i + 1)]);
      }
    }
    score.loss = loss / static_cast<double>(std::max<Index>(1, score.tokens));
    score.accuracy = correct / static_cast<double>(std::max<Index>(1, score.tokens));
    if (nsp_total > 0) score.next_sentence_accuracy = nsp_correct / nsp_total;
    return score;
  }

 private:
  /// GPT-2: the positions of the current causal batch whose next token is predicted, each kept with
  /// probability predicted_fraction from a counter RNG keyed by (seed, epoch, example, position), so a
  /// resumed run draws the same ones. The last position of a row has no next token and is never chosen;
  /// a batch that draws none predicts its first position.
  void choose_predicted_positions(std::int64_t epoch, std::size_t offset) {
    const Index B = causal_.batch.batch_size, L = causal_.batch.length;
    const auto fraction = static_cast<float>(options_.predicted_fraction);
    predicted_.clear();
    for (Index b = 0; b < B; ++b) {
      const std::uint64_t key = mix64(seed_ ^ 0x70726564ULL) ^
                                mix64((static_cast<std::uint64_t>(epoch) << 32) + offset + static_cast<std::uint64_t>(b));
      for (Index i = 0; i + 1 < L; ++i)
        if (counter_uniform(key, static_cast<std::uint64_t>(i)) < fraction) predicted_.emplace_back(b, i);
    }
    if (predicted_.empty()) predicted_.emplace_back(0, 0);
  }

  /// The examples and their order for `epoch` at `length` (kept until another epoch or length is asked for).
  void prepare(std::int64_t epoch, int length) {
    if (length == 0) length = options_.max_length;
    require(length >= 8 && length <= options_.max_length, "pretraining: examples of ", length,
            " tokens asked for; the task has 8 to ", options_.max_length);
    if (epoch == epoch_ && length == length_) return;
    // The full length keeps the key it always had, so runs without a short phase are unchanged.
    const auto key = mix64(seed_ + mix64(static_cast<std::uint64_t>(epoch) + 1)) ^
                     (length == options_.max_length ? 0 : mix64(static_cast<std::uint64_t>(length)));
    if (masked_) pairs_ = make_segment_pairs(train_, {.max_length = length}, key);
    else if (static_cast<std::size_t>(length) != train_windows_.length)
      train_windows_ = TokenWindows::from_corpus(train_, end_of_text_, static_cast<std::size_t>(length));
    order_ = seeded_permutation(masked_ ? pairs_.size() : train_windows_.count(), key ^ 0x6f72646572ULL);
    epoch_ = epoch;
    length_ = length;
  }

  bool masked_;
  const TokenizedCorpus& train_;
  PretrainingTaskOptions options_;
  std::uint64_t seed_;
  MaskedLmVocabulary vocab_;
  int end_of_text_ = -1;
  std::vector<SegmentPair> pairs_, heldout_pairs_;
  TokenWindows train_windows_, heldout_windows_;
  std::int64_t epoch_ = -1;
  int length_ = 0;
  std::vector<std::size_t> order_;
  std::vector<std::uint64_t> keys_;
  MaskedLmBatch masked_lm_;
  CausalLmBatch causal_;
  std::vector<std::pair<Index, Index>> predicted_;
  std::optional<SampledSoftmax> sampler_;
  SampledCandidates candidates_;
  TaskLabels sampled_labels_;
  const std::vector<std::pair<Index, Index>> no_positions_;
};

}  // namespace darkbert
