#pragma once
/// @file
/// Sampled softmax for a language model's head (Jean et al. 2015, "On Using Very Large Target Vocabulary";
/// Bengio & Senécal 2008): each step computes the logits of a candidate set of the vocabulary instead of
/// all of it. At GPT-2's 50,257 ids and a small width the head is ~94% of a step's FLOPs
/// (docs/default-models.md); a few thousand candidates make it a small part while every position still predicts.
///
/// One step's candidates S: every distinct target of the batch (included for certain), then the distinct
/// ids among `draws` draws from a proposal q_j ∝ (count_j + 1)^0.75 over the training tokens. Logit
/// column k of id j gets the constant offset -log π_j, where π_j is j's probability of being in S given the
/// batch (1 for a target, 1 - (1 - q_j)^draws for a drawn id):
/// @code
/// loss_r = log Σ_{j∈S} exp(z_rj - log π_j) - z_r,target
/// @endcode
/// Σ_{j∈S} exp(z_j) / π_j is the Horvitz–Thompson estimate of the full partition function Σ_j exp(z_j), so
/// the gradient approaches the full softmax's as S covers the probable ids (all the frequent ones are in S
/// at every step). Held-out scores always use the full softmax.
///
/// @code
/// darkbert::SampledSoftmax sampler(token_counts, 8192);
/// sampler.draw(targets, key, candidates);  // candidates.rows / .offsets -> ForwardOptions::decoder_rows / _offsets
///                                          // candidates.targets: each target's column (ignore_index kept)
/// @endcode

#include <algorithm>  // std::upper_bound, std::min
#include <cmath>      // std::pow, std::log, std::log1p, std::expm1
#include <cstdint>    // std::uint64_t, std::int64_t
#include <span>       // std::span
#include <vector>     // std::vector

#include "../core/counter_rng.hpp"  // mix64
#include "../core/error.hpp"
#include "../core/matrix.hpp"       // Index
#include "../kernels/loss.hpp"    // ignore_index

namespace darkbert {

/// One step's candidate vocabulary (see the file comment).
struct SampledCandidates {
  std::vector<Index> rows;       ///< vocabulary ids of the logit columns: the batch's targets, then drawn ids
  std::vector<double> offsets;   ///< -log π of each column (0 for the targets)
  std::vector<int> targets;      ///< each target's column in rows (kernels::ignore_index kept)
};

/// Draws candidate sets from a fixed proposal over the vocabulary (see the file comment).
class SampledSoftmax {
 public:
  /// `counts[j]`: how often id j occurs in the training data; `draws` per step (> 0).
  SampledSoftmax(const std::vector<std::int64_t>& counts, Index draws, double power = 0.75)
      : draws_(draws), column_(counts.size(), -1) {
    require(!counts.empty() && draws > 0, "SampledSoftmax: need a vocabulary and a positive number of draws, got ",
            counts.size(), " ids and ", draws, " draws");
    cumulative_.resize(counts.size());
    double total = 0;
    for (std::size_t j = 0; j < counts.size(); ++j) {
      require(counts[j] >= 0, "SampledSoftmax: count of id ", j, " is negative");
      cumulative_[j] = total += std::pow(static_cast<double>(counts[j]) + 1, power);
    }
    log_not_drawn_.resize(counts.size());
    for (std::size_t j = 0; j < counts.size(); ++j) {
      const double q = (cumulative_[j] - (j ? cumulative_[j - 1] : 0.0)) / total;
      log_not_drawn_[j] = static_cast<double>(draws) * std::log1p(-q);  // log (1 - q)^draws
    }
    total_ = total;
  }

  /// Vocabulary size.
  Index vocab_size() const { return static_cast<Index>(column_.size()); }

  /// The probability that a draw of a step includes id j at least once: 1 - (1 - q_j)^draws.
  double inclusion(Index j) const { return -std::expm1(log_not_drawn_[static_cast<std::size_t>(j)]); }

  /// The candidates for one step whose targets are `targets` (ids or kernels::ignore_index); the draws are
  /// the counter stream `key` (so a resumed run draws the same ones).
  void draw(std::span<const int> targets, std::uint64_t key, SampledCandidates& out) {
    out.rows.clear();
    out.offsets.clear();
    out.targets.assign(targets.size(), kernels::ignore_index);
    auto add = [&](Index id, double offset) {
      auto& col = column_[static_cast<std::size_t>(id)];
      if (col < 0) {
        col = static_cast<Index>(out.rows.size());
        out.rows.push_back(id);
        out.offsets.push_back(offset);
      }
      return col;
    };
    for (std::size_t r = 0; r < targets.size(); ++r) {
      if (targets[r] == kernels::ignore_index) continue;
      require(targets[r] >= 0 && targets[r] < vocab_size(), "SampledSoftmax: target ", targets[r], " at ", r,
              " outside the vocabulary [0, ", vocab_size(), ")");
      out.targets[r] = static_cast<int>(add(targets[r], 0.0));
    }
    for (Index d = 0; d < draws_; ++d) {
      // 53-bit uniform: the rarest ids have q ~ 1e-7
      const double u = static_cast<double>(mix64(key + static_cast<std::uint64_t>(d) * 0x9e3779b97f4a7c15ULL) >> 11) *
                       0x1.0p-53 * total_;
      const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
      const Index id = std::min<Index>(static_cast<Index>(it - cumulative_.begin()), vocab_size() - 1);
      add(id, -std::log(inclusion(id)));
    }
    for (const Index id : out.rows) column_[static_cast<std::size_t>(id)] = -1;  // ready for the next step
  }

 private:
  Index draws_;
  double total_ = 0;
  std::vector<double> cumulative_;     // running sum of (count + 1)^power
  std::vector<double> log_not_drawn_;  // draws · log(1 - q_j)
  std::vector<Index> column_;          // id -> its column in the step being drawn, else -1
};

}  // namespace darkbert
