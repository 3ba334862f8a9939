#pragma once
/// @file
/// Growing a pre-LN model in depth during pretraining: a shallow model is trained first, then blocks are
/// added on top of its own, each starting as the identity (its attention and MLP output projections zero),
/// so the grown model computes exactly what the shallow one did and training continues from there.
/// Gong et al. (2019) grew BERT by stacking copies of its blocks; copies would repeat the shallow model's
/// heads higher up, and repeated heads are one of the things the study measures, so the new blocks here
/// start from fresh random weights instead.
///
/// @code
/// auto shallow = darkbert::Transformer<float>::random(darkbert::ModelConfig::gpt2_shape(3, 128, 4, 512), heads, 1);
/// ... train it ...
/// auto deep = darkbert::with_identity_blocks(shallow, 12, 2);  // same logits, 12 blocks
/// @endcode

#include <cstdint>  // std::uint64_t
#include <cstddef>  // std::size_t

#include "../core/error.hpp"
#include "../model/transformer.hpp"

namespace darkbert {

/// `model` with blocks added on top up to `layers` in all: embeddings, the existing blocks and the task
/// heads are copied, every new block is drawn as Transformer::random draws it (seeded by `seed`) except its
/// attention and MLP output projections (weights and biases), which are zero. In a pre-LN block that makes
/// the block the identity (x + 0 + 0), so the grown model's outputs equal the original's bit for bit.
/// Post-LN blocks (BERT) normalise after the residual and cannot start as the identity: refused.
template <class T>
Transformer<T> with_identity_blocks(const Transformer<T>& model, int layers, std::uint64_t seed) {
  const ModelConfig& from = model.config();
  require(from.pre_layer_norm, "growing a model in depth: ", family_name(from.family),
          " blocks normalise after the residual (post-LN), so a new block cannot start as the identity; "
          "only pre-LN models (GPT-2) can grow");
  require(layers > from.num_layers, "growing a model in depth: ", layers, " blocks in all is not more than its ",
          from.num_layers);
  ModelConfig config = from;
  config.num_layers = layers;
  auto grown = Transformer<T>::random(config, model.task_heads(), seed);
  auto& to = grown.params();
  const auto& p = model.params();
  to.embeddings = p.embeddings;
  to.task_heads = p.task_heads;
  for (std::size_t i = 0; i < p.blocks.size(); ++i) to.blocks[i] = p.blocks[i];
  for (std::size_t i = p.blocks.size(); i < to.blocks.size(); ++i) {
    auto& block = to.blocks[i];
    for (auto* out : {&block.attn_out, &block.mlp_out}) {
      out->weight.setZero();
      out->bias.setZero();
    }
  }
  return grown;
}

}  // namespace darkbert
