#pragma once
/// @file
/// How a fresh model's learned position embeddings start: N(0, 0.02) as Hugging Face draws them, or the
/// sinusoids of Vaswani et al. (2017), then learned as usual.
///
/// Why it matters for what the paper looks at: a positional head ("attend to the previous token") needs
/// W_Qᵀ W_K to map every position's embedding onto its neighbour's. With independent random rows that is
/// 127 separate pairs to learn, each seeing 1/127 of the signal; with sinusoids the shift by one is the
/// same rotation at every position, so every position teaches the same map. The table stays an ordinary
/// learned parameter (the checkpoint is a standard BERT or GPT-2).
///
/// @code
/// auto model = darkbert::Transformer<float>::random(config, heads, seed);
/// darkbert::init_sinusoidal_positions(model.params().embeddings.position, 0.02);
/// // or, as `darkbert pretrain --position-init normal|sinusoidal --position-rms R` does:
/// darkbert::init_positions(model.params().embeddings.position, "sinusoidal", 0.06,
///                          darkbert::Transformer<float>::random_init_std);
/// @endcode

#include <cmath>        // std::sin, std::cos, std::pow, std::sqrt
#include <string_view>  // std::string_view

#include "../core/error.hpp"
#include "../core/matrix.hpp"

namespace darkbert {

/// Overwrites a [positions, H] table (H even) with sinusoids scaled to root-mean-square `rms` (the scale of
/// the N(0, rms) rows it replaces): row p, columns 2i and 2i + 1 = sin and cos of p / 10000^(2i / H).
template <class T>
void init_sinusoidal_positions(Matrix<T>& table, double rms) {
  const Index H = table.cols();
  require(H % 2 == 0, "init_sinusoidal_positions: the hidden size must be even, got ", H);
  const double scale = rms * std::sqrt(2.0);  // a sin/cos pair has mean square 1/2
  for (Index p = 0; p < table.rows(); ++p)
    for (Index i = 0; i < H / 2; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(H));
      table(p, 2 * i) = static_cast<T>(scale * std::sin(angle));
      table(p, 2 * i + 1) = static_cast<T>(scale * std::cos(angle));
    }
}

/// The start of a fresh model's position table: "sinusoidal" (above) or "normal" (the model's own
/// N(0, initializer_range) draw, rescaled; pass Transformer::random_init_std), either at root-mean-square
/// `rms`. Why the scale matters: the
/// embedding LayerNorm sees word + position, and the tied MLM decoder grows the word rows fast; positions
/// that start small stay a small part of what attention sees.
template <class T>
void init_positions(Matrix<T>& table, std::string_view kind, double rms, double initializer_range) {
  require(rms > 0, "init_positions: the root-mean-square must be positive, got ", rms);
  if (kind == "sinusoidal") init_sinusoidal_positions(table, rms);
  else if (kind != "normal") fail("init_positions: unknown kind '", kind, "' (normal or sinusoidal)");
  else if (rms != initializer_range) table *= static_cast<T>(rms / initializer_range);
}

}  // namespace darkbert
