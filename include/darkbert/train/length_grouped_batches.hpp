#pragma once
/// @file
/// One epoch's batches with examples of like length together, so that little of each batch is padding.
///
/// @code
/// std::vector<std::size_t> lengths = ...;                       // tokens of each training example
/// auto batches = darkbert::length_grouped_batches(lengths, 32, seed + epoch);
/// for (const auto& rows : batches) train_on(batch_of(train, rows, pad_id, types));
/// @endcode
///
/// A batch is padded to its longest example, so random batches of GLUE sentences are 1.5-3 times their real
/// tokens (SST-2's short phrases most). The recipe is the one Hugging Face's Trainer calls
/// `group_by_length`: shuffle every example from the seed, cut the order into groups of `group_batches`
/// batches, sort each group by length (longest first, ties in shuffled order), cut it into batches, then
/// shuffle the batches. Each example is still seen once per epoch in a seeded random batch; only batch-mates
/// are chosen by length within a group of random examples (1,600 with the defaults). Only the last group
/// can leave a short batch, so an epoch has ceil(n / batch_size) steps, as with plain shuffling.

#include <algorithm>  // std::stable_sort, std::min
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t
#include <span>       // std::span
#include <utility>    // std::move
#include <vector>     // std::vector

#include "../core/error.hpp"
#include "../data/seeded_shuffle.hpp"  // seeded_permutation

namespace darkbert {

/// `order` cut into consecutive batches of batch_size indices (the last one shorter if need be).
inline std::vector<std::vector<std::size_t>> consecutive_batches(std::span<const std::size_t> order,
                                                                 std::size_t batch_size) {
  require(batch_size > 0, "consecutive_batches: batch size must be positive");
  std::vector<std::vector<std::size_t>> batches;
  batches.reserve((order.size() + batch_size - 1) / batch_size);
  for (std::size_t first = 0; first < order.size(); first += batch_size)
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                         order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + batch_size)));
  return batches;
}

/// The batches of one epoch over examples of the given `lengths` (indices into them), grouped by length as
/// described above; `seed` decides everything (pass a different one each epoch).
inline std::vector<std::vector<std::size_t>> length_grouped_batches(std::span<const std::size_t> lengths,
                                                                    std::size_t batch_size, std::uint64_t seed,
                                                                    std::size_t group_batches = 50) {
  require(batch_size > 0 && group_batches > 0, "length_grouped_batches: batch size and group size must be positive");
  const std::vector<std::size_t> order = seeded_permutation(lengths.size(), seed);
  const std::size_t group = batch_size * group_batches;
  std::vector<std::vector<std::size_t>> batches;
  batches.reserve((lengths.size() + batch_size - 1) / batch_size);
  for (auto& members : consecutive_batches(order, group)) {
    std::stable_sort(members.begin(), members.end(),
                     [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
    for (auto& batch : consecutive_batches(members, batch_size)) batches.push_back(std::move(batch));
  }
  // The batch order from its own stream: the golden-ratio increment keeps it apart from the example order's.
  const std::vector<std::size_t> batch_order = seeded_permutation(batches.size(), seed + 0x9E3779B97F4A7C15ULL);
  std::vector<std::vector<std::size_t>> shuffled;
  shuffled.reserve(batches.size());
  for (std::size_t i : batch_order) shuffled.push_back(std::move(batches[i]));
  return shuffled;
}

/// Every index ordered by length, longest first, ties in index order: evaluation batches cut from it are
/// padded by a few tokens at most (the scores go back to their examples through the order).
inline std::vector<std::size_t> length_sorted_order(std::span<const std::size_t> lengths) {
  std::vector<std::size_t> order(lengths.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  return order;
}

}  // namespace darkbert
