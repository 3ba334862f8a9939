#pragma once
/// @file
/// The scale a fresh model's query and key weights start at.
///
/// Why it can matter: an attention pattern lives in W_Qᵀ W_K, a product of two matrices that both start
/// near zero (N(0, 0.02) at width 128 puts the initial logits at ≈ 0.05, every map near uniform), so the
/// gradient that grows a pattern is itself proportional to their scale. Drawing them larger starts that
/// product further from the flat saddle; the weights are otherwise ordinary (the checkpoint is standard).
///
/// @code
/// auto model = darkbert::Transformer<float>::random(config, heads, seed);
/// darkbert::rescale_query_key(model.params(), 0.05, darkbert::Transformer<float>::random_init_std);
/// @endcode

#include "../core/error.hpp"
#include "../model/parameters.hpp"

namespace darkbert {

/// Multiplies the query and key rows ([0, 2H) of every block's fused qkv weight) by std / initializer_range,
/// so that weights drawn N(0, initializer_range) become N(0, std). The biases (zero at the start) stay.
template <class T>
void rescale_query_key(TransformerParams<T>& params, double std, double initializer_range) {
  require(std > 0 && initializer_range > 0, "rescale_query_key: the standard deviations must be positive, got ", std,
          " and ", initializer_range);
  if (std == initializer_range) return;
  for (auto& block : params.blocks) {
    const Index H = block.qkv.weight.cols();
    require(block.qkv.weight.rows() == 3 * H, "rescale_query_key: a qkv weight of ", block.qkv.weight.rows(), " rows, expected 3 x ", H);
    block.qkv.weight.topRows(2 * H) *= static_cast<T>(std / initializer_range);
  }
}

}  // namespace darkbert
