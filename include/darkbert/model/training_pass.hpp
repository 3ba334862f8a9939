#pragma once
/// @file
/// What a forward pass needs to know to train: the tape it records on, where parameter gradients
/// accumulate, and the dropout stream. Passed as ForwardOptions::training; null = inference.
///
/// @code
/// darkbert::autodiff::Tape<float> tape;
/// auto grads = model.zero_gradients();
/// darkbert::TrainingPass<float> pass{.tape = &tape, .gradients = &grads, .seed = 7, .step = step};
/// model.forward_into(batch, {.training = &pass}, out);
/// tape.backward(darkbert::task_loss(tape, model, batch, out, labels));   // train/task_loss.hpp
/// @endcode

#include <cstdint>  // std::uint64_t

#include "../autodiff/tape.hpp"
#include "../core/counter_rng.hpp"
#include "../kernels/dropout.hpp"
#include "parameters.hpp"

namespace darkbert {

/// Makes a forward pass a training pass: records onto a tape, with dropout (see the README's training loop).
template <class T>
struct TrainingPass {
  autodiff::Tape<T>* tape = nullptr;          ///< reset by the caller before each step
  TransformerParams<T>* gradients = nullptr;  ///< same shapes as the model's (Transformer::zero_gradients); += here
  bool dropout = true;                        ///< the config's dropout probabilities; false = dropout off
  double dropout_scale = 1;                   ///< every probability times this (a dropout warm-up ramps it from 0)
  std::uint64_t seed = 0;                     ///< dropout masks: stream_key(seed, step, site)
  std::uint64_t step = 0;  ///<  the optimisation step (new dropout masks each step)
  /// false: the encoder runs as in inference (no dropout, nothing saved) and only the task heads learn
  /// (the paper's frozen-encoder baseline).
  bool train_encoder = true;
  /// Which slice of the step's batch this pass runs (TrainingStep's slices): each slice draws its
  /// own masks; slice 0's are those of the whole batch run at once.
  std::uint64_t slice = 0;

  /// The mask of one dropout site (a layer's attention probabilities, a residual branch, ...).
  kernels::DropoutMask mask(double p, std::uint64_t site) const {
    return {dropout ? static_cast<float>(p * dropout_scale) : 0.0f, stream_key(seed, step, site + (slice << 32))};
  }
};

/// Dropout sites, so that every mask of a step has its own stream.
namespace dropout_site {
/// Site of the dropout after the embeddings.
inline constexpr std::uint64_t embeddings = 1;
/// Site of the attention-probability dropout of `layer`.
inline std::uint64_t attention(int layer) { return 16 + 4 * static_cast<std::uint64_t>(layer); }
/// Site of the dropout on the attention output of `layer`.
inline std::uint64_t attention_output(int layer) { return 17 + 4 * static_cast<std::uint64_t>(layer); }
/// Site of the dropout on the MLP output of `layer`.
inline std::uint64_t mlp_output(int layer) { return 18 + 4 * static_cast<std::uint64_t>(layer); }
/// @{
/// sites of the classifier's dropouts (on its input, and after its hidden layer)
inline constexpr std::uint64_t classifier_input = 2, classifier_hidden = 3;
/// @}
}  // namespace dropout_site

}  // namespace darkbert
