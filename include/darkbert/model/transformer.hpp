#pragma once
/// @file
/// The transformer: one definition for BERT, RoBERTa, DistilBERT (post-LN encoders) and GPT-2 (pre-LN,
/// causal), loaded from a Hugging Face checkpoint folder and run on a padded batch, for inference, analysis
/// and training alike.
///
/// @code
/// auto model = darkbert::Transformer<float>::load("bert-base-uncased/");
/// auto out = model.forward(batch);            // every hidden state and per-head attention map
/// out.attentions;                              // [layers, B, heads, L, L]
/// @endcode
///
/// The forward pass is a sequence of kernels (kernels/, model/layers.hpp) over a few preallocated buffers, with a hook
/// test at every named point (hooks/hook_point.hpp). Each kernel keeps its shapes in a comment.
///
/// Training (ForwardOptions::training) runs the same code. Each block then writes its activations into its
/// own buffers on the tape's arena instead of the shared one-layer scratch, and records one tape node whose
/// block_backward mirrors block_forward in reverse (llm.c style); the embedding block and GPT-2's ln_f are
/// nodes of their own, and the task heads are written once on autodiff functions, so they record
/// themselves. Inference records nothing and keeps its memory and speed.

#include <omp.h>  // omp_get_max_threads, omp_get_thread_num

#include <algorithm>   // std::copy, std::fill
#include <cmath>       // std::sqrt
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "../autodiff/functions.hpp"
#include "../autodiff/tape.hpp"
#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../core/tensor.hpp"
#include "../core/threads.hpp"  // for_column_blocks
#include "../core/xwt_gemm.hpp"
#include "../hooks/hooks.hpp"
#include "../hooks/masking_policy.hpp"
#include "../kernels/activation.hpp"
#include "../kernels/attention.hpp"
#include "../kernels/dropout.hpp"
#include "batch.hpp"
#include "config.hpp"
#include "layers.hpp"  // Linear and LayerNorm layers through the kernels
#include "parameter_names.hpp"
#include "parameters.hpp"
#include "task_heads.hpp"
#include "training_pass.hpp"

namespace darkbert {

/// What a forward pass keeps and computes, and what acts on it: `model.forward(batch, {.hooks = &hooks})`.
template <class T>
struct ForwardOptions {
  bool keep_hidden_states = true;  ///< hidden_states [layers+1, B, L, H]
  bool keep_attentions = true;     ///< attentions [layers, B, heads, L, L]
  bool compute_heads = true;       ///< pooler / classifier / NSP / LM logits when the model has them
  bool token_logits = true;        ///< the [B, L, V] LM / MLM logits (the largest output)
  /// Compute MLM / LM logits only at these (batch, position) pairs, into `selected_logits` [P, V]
  /// (pretraining needs only the masked positions). Empty = all positions (if token_logits).
  std::vector<std::pair<Index, Index>> logit_positions;
  /// Compute the LM logits only for these vocabulary ids (sampled softmax, train/sampled_softmax.hpp):
  /// logit column k is id decoder_rows[k], plus the constant decoder_offsets[k] (e.g. minus the log of the
  /// id's probability of being drawn). Empty = the whole vocabulary. Bias-free decoders only (GPT-2).
  std::vector<Index> decoder_rows;
  std::vector<double> decoder_offsets;  ///<  one per decoder row (see decoder_rows)
  const HookRegistry<T>* hooks = nullptr;  ///<  hooks to fire; null = none
  const MaskingPolicies<T>* policies = nullptr;  ///<  masking policies; null = none
  /// Prefix caching: start at block `start_layer` from the residual stream `start_hidden` [B, L, H]
  /// entering it (e.g. hidden_states[start_layer] of an earlier run of the same batch). Blocks below are
  /// not run; their hidden states and attentions are left zero in the result. (For GPT-2 the last listed
  /// hidden state is after ln_f, so resuming at start_layer == num_layers needs the raw block output.)
  /// start_hidden may point into the result that receives this run (it is read before anything is written).
  int start_layer = 0;
  const T* start_hidden = nullptr;  ///<  the residual stream entering start_layer (see start_layer)
  /// Training: record onto a tape, with dropout (model/training_pass.hpp). Null = inference.
  const TrainingPass<T>* training = nullptr;
};

namespace detail {

/// Where one block writes its activations. Inference points every field at the shared one-layer scratch
/// (and leaves the training-only ones null); training gives each block its own buffers on the tape's
/// arena, which block_backward reads.
template <class T>
struct BlockBuffers {
  T* normed1 = nullptr;      ///< [N, H] pre-LN: LN_1(in)
  T* qkv = nullptr;          ///< [N, 3H]
  T* ctx = nullptr;          ///< [N, H] per-head context, heads side by side
  T* proj = nullptr;         ///< [N, H] attention or MLP output projection (after dropout)
  T* sum1 = nullptr;         ///< [N, H] post-LN: in + attention branch, the input of the first LayerNorm
  T* mid = nullptr;          ///< [N, H] residual stream between attention and MLP
  T* normed2 = nullptr;      ///< [N, H] pre-LN: LN_2(mid)
  T* mlp_pre = nullptr;      ///< [N, I] MLP hidden before the activation (training)
  T* mlp = nullptr;          ///< [N, I] MLP hidden after the activation
  T* sum2 = nullptr;         ///< [N, H] post-LN: mid + MLP branch, the input of the second LayerNorm
  kernels::NormStats<T> stats1, stats2;  ///< of the two LayerNorms (training)
  T* dropped = nullptr;      ///< [threads, L, L] dropped-out pattern copies (training with attention dropout)
  T* softmax = nullptr;      ///< [B, heads, L, L] the pattern before a pass-through pattern hook changed it
  T* d_maps = nullptr;       ///< [B, heads, L, L] dP, then dS, when gradient hooks read them (training)
};

/// Buffers of one forward pass, kept in ForwardResult so that running again into the same result object
/// allocates nothing (and touches no fresh pages).
template <class T>
struct ForwardScratch {
  Matrix<T> qkv;     ///< [N, 3H]
  Matrix<T> ctx;     ///< [N, H]
  Matrix<T> proj;    ///< [N, H]
  Matrix<T> mid;     ///< [N, H]
  Matrix<T> normed;  ///< [N, H]  pre-LN input of attention / MLP
  Matrix<T> mlp;     ///< [N, I]
  Matrix<T> last_block;          ///< [N, H] GPT-2: output of the last block, before ln_f
  Matrix<T> start;               ///< [N, H] copy of ForwardOptions::start_hidden
  std::vector<T> scores;         ///< [B, heads, L, L] when attention maps are not kept
  Matrix<T> hidden_a, hidden_b;  ///< [N, H] ping-pong residual stream when hidden states are not kept
  std::vector<int> mask;         ///< [B, L] attention mask (all ones if the batch has none)
  std::vector<Index> rows;       ///< rows the task heads read (first tokens, last tokens, logit positions)
  std::vector<Index> decoder_rows;  ///< copy of ForwardOptions::decoder_rows (read by the backward)
  std::vector<T> decoder_offsets;   ///< ForwardOptions::decoder_offsets in T
  XwtScratch gemm;               ///< packed activations of the linear layers
  kernels::AttentionScratch attention;  ///< per-thread memory of the per-head products
  /// The heads' non-recording tape when not training (behind a pointer: a tape does not move, a result does).
  std::unique_ptr<autodiff::Tape<T>> inference_tape = std::make_unique<autodiff::Tape<T>>();
  std::vector<T*> streams;                  ///< residual stream entering each layer
  std::vector<autodiff::Var<T>> stream_vars;  ///< the same as tape Vars (training)

  void prepare(const ModelConfig& c, Index N, Index B, Index L, bool need_scores, bool need_hidden) {
    const Index H = c.hidden_size;
    auto fit = [](Matrix<T>& m, Index rows, Index cols) {
      if (m.rows() != rows || m.cols() != cols) m.resize(rows, cols);
    };
    fit(qkv, N, 3 * H);
    fit(ctx, N, H);
    fit(proj, N, H);
    fit(mid, N, H);
    fit(mlp, N, c.intermediate_size);
    if (c.pre_layer_norm) {
      fit(normed, N, H);
      fit(last_block, N, H);
    }
    if (need_scores) scores.resize(static_cast<std::size_t>(B * c.num_heads * L * L));
    if (need_hidden) {
      fit(hidden_a, N, H);
      fit(hidden_b, N, H);
    }
  }
  BlockBuffers<T> shared_buffers() {
    BlockBuffers<T> b;
    b.normed1 = b.normed2 = normed.data();
    b.qkv = qkv.data();
    b.ctx = ctx.data();
    b.proj = proj.data();
    b.mid = mid.data();
    b.mlp = mlp.data();
    return b;
  }
};

}  // namespace detail

/// The outputs as tape Vars, set by a training forward: what a loss is built from.
template <class T>
struct OutputVars {
  autodiff::Var<T> last_hidden_state;     ///< [N, H]
  autodiff::Var<T> pooled;                ///< [B, H]
  autodiff::Var<T> sequence_logits;       ///< [B, labels]
  autodiff::Var<T> token_logits;          ///< [B·L, V]
  autodiff::Var<T> selected_logits;       ///< [P, V]
  autodiff::Var<T> next_sentence_logits;  ///< [B, 2]
};

/// The outputs of a forward pass (empty tensors for what was not asked for).
template <class T>
struct ForwardResult {
  Tensor<T, 4> hidden_states;      ///< [layers+1, B, L, H]; [0] = embeddings; GPT-2: last after ln_f
  Tensor<T, 5> attentions;         ///< [layers, B, heads, L, L]
  Tensor<T, 3> last_hidden_state;  ///< [B, L, H] (GPT-2: after ln_f)
  Tensor<T, 2> pooled;             ///< [B, H]        BERT/RoBERTa pooler
  Tensor<T, 2> sequence_logits;    ///< [B, labels]   sequence classification / regression
  Tensor<T, 3> token_logits;       ///< [B, L, V]     masked-LM or causal-LM logits
  Tensor<T, 2> selected_logits;    ///< [P, V]        logits at ForwardOptions::logit_positions
  Tensor<T, 2> next_sentence_logits;  ///< [B, 2]     BERT NSP
  OutputVars<T> vars;              ///< training only: the outputs above as tape Vars

  /// The embedding block output = hidden_states[0], [B, L, H].
  auto embeddings() const { return xt::view(hidden_states, 0); }

  detail::ForwardScratch<T> scratch;  ///< reused by forward_into; not part of the results
};

/// The one model of every family: load a checkpoint, run forward passes (with hooks and policies), train.
/// @code
/// auto model = darkbert::Transformer<float>::load("bert-base-uncased/");
/// auto out = model.forward(batch);   // out.attentions [layers, B, heads, L, L]
/// @endcode
template <class T>
class Transformer {
 public:
  /// float or double.
  using Scalar = T;

  /// A model from a config and its parameters (validated against each other).
  Transformer(ModelConfig config, TransformerParams<T> params)
      : config_(std::move(config)), params_(std::move(params)) {}

  /// Loads config.json + model.safetensors (or a sharded index) from a Hugging Face folder.
  static Transformer load(const std::filesystem::path& dir);

  /// Writes config.json + model.safetensors (F32 or F64 as T) in Hugging Face layout, under the family's
  /// own tensor names (prefixed for task models, as Hugging Face saves them), readable by load().
  void save(const std::filesystem::path& dir) const;

  /// Standard deviation of random()'s weights (Hugging Face's initializer_range).
  static constexpr double random_init_std = 0.02;
  /// A model of the given shape with seeded random weights (N(0, random_init_std); LayerNorm 1 and 0).
  static Transformer random(const ModelConfig& config, const TaskHeads& heads, std::uint64_t seed);

  /// This encoder under other task heads, e.g. a pretrained BERT turned into a sequence classifier:
  /// every parameter the two share (same canonical name and shape: embeddings, blocks, a pooler) is
  /// copied, every new one (the classifier) is drawn as random() draws it. `config` describes the new
  /// model (architecture, labels, problem type) and must have this model's encoder shape.
  Transformer with_task_heads(const ModelConfig& config, const TaskHeads& heads, std::uint64_t seed) const;

  /// The configuration.
  const ModelConfig& config() const { return config_; }
  /// The parameters.
  const TransformerParams<T>& params() const { return params_; }
  /// The parameters, for training or editing.
  TransformerParams<T>& params() { return params_; }
  /// Checkpoint tensors the model did not use (extra heads, unknown entries), for the caller to report.
  const std::vector<std::string>& unused_tensors() const { return unused_; }
  /// The task heads this model carries.
  TaskHeads task_heads() const;
  /// A parameter set of this model's shapes, all zero: where a training pass accumulates gradients.
  TransformerParams<T> zero_gradients() const;

  /// Runs the forward pass; throws darkbert::error naming the problem for a malformed batch.
  ForwardResult<T> forward(const Batch& batch, const ForwardOptions<T>& options = {}) const {
    ForwardResult<T> result;
    forward_into(batch, options, result);
    return result;
  }
  /// Same, reusing the buffers of `result` from an earlier call (no allocation when shapes repeat).
  /// In training, `result` must stay alive and unused until the tape's backward has run.
  void forward_into(const Batch& batch, const ForwardOptions<T>& options, ForwardResult<T>& result) const;

  /// The position GPT-2's classifier reads in row b: the rightmost token that is not pad_token_id (as
  /// Hugging Face's GPT2ForSequenceClassification); without a pad token, the last real token by the mask.
  Index last_token(const Batch& batch, Index b) const {
    Index last = 0;
    for (Index i = 0; i < batch.length; ++i)
      if (config_.pad_token_id >= 0 ? batch.id(b, i) != config_.pad_token_id : batch.mask(b, i) != 0) last = i;
    return last;
  }

  /// The embedding block alone: [B, L] ids -> out [B, L, H] (what hook_embed sees). No validation.
  /// Training keeps the LayerNorm input (`sum` [N, H]) and statistics.
  void embed(const Batch& batch, T* out, T* sum = nullptr, kernels::NormStats<T> stats = {}) const;

  /// Checks a batch against this model (sizes, ids in the vocabulary, length within the positions, token
  /// types); throws naming the row and column. Every forward pass starts with it.
  void validate_batch(const Batch& batch) const;

 private:
  using Workspace = detail::ForwardScratch<T>;
  using Buffers = detail::BlockBuffers<T>;
  using Var = autodiff::Var<T>;

  kernels::AttentionShape attention_shape(const Batch& batch) const {
    return {batch.batch_size, batch.length, config_.num_heads, config_.head_dim(), config_.causal};
  }
  T attention_scale(int layer) const {
    T scale = T(1) / std::sqrt(static_cast<T>(config_.head_dim()));
    return config_.scale_by_inverse_layer_idx ? scale / static_cast<T>(layer + 1) : scale;
  }
  void block_forward(int layer, const Batch& batch, const T* in, T* out, T* attn, const Buffers& buf, Workspace& ws,
                     const ForwardOptions<T>& options) const;
  void attention(int layer, const Batch& batch, T* attn, const Buffers& buf, Workspace& ws,
                 const ForwardOptions<T>& options) const;
  /// d_out [N, H] (gradient of the block output) -> d_in [N, H] (+=), parameter gradients (+=). `hooks`
  /// and `mask` (the batch's [B, L] attention mask) for the gradient hooks inside the block.
  void block_backward(int layer, const Batch& batch, const T* in, const T* attn, const Buffers& buf,
                      const T* d_out, T* d_in, T* work, const TrainingPass<T>& pass,
                      const MaskingPolicies<T>* policies, const HookRegistry<T>* hooks, const int* mask) const;
  /// The attention part of block_backward: d_ctx [N, H] -> d_qkv [N, 3H].
  void attention_backward(int layer, const Batch& batch, const T* attn, const Buffers& buf, const T* d_ctx,
                          T* d_qkv, T* work, const TrainingPass<T>& pass, const MaskingPolicies<T>* policies,
                          const HookRegistry<T>* hooks, const int* mask) const;
  void embed_backward(const Batch& batch, const T* sum, kernels::NormStats<T> stats, T* d_out, T* work,
                      EmbeddingParams<T>& grads) const;
  void heads_forward(const Batch& batch, const Var& last, ForwardResult<T>& result, const ForwardOptions<T>& options,
                     autodiff::Tape<T>& tape) const;
  /// Whether any registered hook fires at (point, layer); one pointer test when there are none.
  static bool hooked(const ForwardOptions<T>& options, HookPoint point, int layer) {
    return options.hooks && !options.hooks->empty() && options.hooks->active(point, layer);
  }
  void run_hook(const ForwardOptions<T>& options, const Batch& batch, const int* batch_mask, HookPoint point,
                int layer, TensorView<T> view, int head_axis = -1) const {
    if (!hooked(options, point, layer)) return;
    options.hooks->run(HookContext<T>{point, layer, -1, view, batch_mask, batch.batch_size, batch.length, config_.causal},
                       head_axis, options.training != nullptr);
  }
  /// Part k (0 = q, 1 = k, 2 = v) of a fused [N, 3H] qkv buffer (or its gradient) as the [B, L, heads, d]
  /// view its hook sees.
  TensorView<T> qkv_view(T* qkv, int k, Index B, Index L) const {
    const Index H = config_.hidden_size, d = config_.head_dim();
    TensorView<T> v;
    v.data = qkv + k * H;
    v.rank = 4;
    v.shape = {B, L, config_.num_heads, d};
    v.strides = {L * 3 * H, 3 * H, d, 1};
    return v;
  }
  static HookPoint qkv_point(int k) { return k == 0 ? HookPoint::q : k == 1 ? HookPoint::k : HookPoint::v; }
  /// Whether the backward has gradient-hook work at (point, layer).
  static bool hooked_backward(const HookRegistry<T>* hooks, HookPoint point, int layer) {
    return hooks && !hooks->empty() && hooks->active_backward(point, layer);
  }
  /// The backward's counterpart of run_hook: `gradient` is ∂loss/∂(the point's tensor).
  void run_gradient_hook(const HookRegistry<T>* hooks, const Batch& batch, const int* batch_mask, HookPoint point,
                         int layer, TensorView<T> gradient, int head_axis = -1) const {
    if (!hooked_backward(hooks, point, layer)) return;
    hooks->run_backward(
        HookContext<T>{point, layer, -1, gradient, batch_mask, batch.batch_size, batch.length, config_.causal}, head_axis);
  }

  ModelConfig config_;
  TransformerParams<T> params_;
  std::vector<std::string> unused_;
};

// ------------------------------------------------------------------------------------------ forward

template <class T>
void Transformer<T>::validate_batch(const Batch& batch) const {
  batch.validate();
  const auto& c = config_;
  if (batch.length > c.max_sequence_length())
    fail("input of length ", batch.length, " exceeds the model's max_position_embeddings (", c.max_positions,
         c.position_offset() ? ", minus the RoBERTa position offset " + std::to_string(c.position_offset()) : "",
         "): at most ", c.max_sequence_length(), " tokens; truncate the input (EncodeOptions::max_length)");
  for (std::size_t i = 0; i < batch.input_ids.size(); ++i) {
    const int id = batch.input_ids[i];
    if (id < 0 || id >= c.vocab_size)
      fail("input_ids[", i / batch.length, "][", i % batch.length, "] = ", id, " is outside the vocabulary [0, ",
           c.vocab_size, ")");
  }
  for (std::size_t i = 0; i < batch.token_type_ids.size(); ++i) {
    const int t = batch.token_type_ids[i];
    const int types = std::max(c.type_vocab_size, 1);  // families without token types accept only 0
    if (t < 0 || t >= types)
      fail("token_type_ids[", i / batch.length, "][", i % batch.length, "] = ", t, " but the model has ", types,
           " token type(s)");
  }
}

namespace detail {
/// Position id of token i of row b, visiting i = 0, 1, ... in order (RoBERTa: pad + 1 + index among real
/// tokens, padding -> pad; `real_seen` counts the real tokens so far).
inline Index next_position(const Batch& batch, const ModelConfig& c, Index b, Index i, Index& real_seen) {
  if (c.family != Family::roberta) return i;
  const bool real = batch.id(b, i) != c.pad_token_id;
  real_seen += real;
  return real ? c.pad_token_id + real_seen : c.pad_token_id;
}
}  // namespace detail

/// Embedding block: [B, L] ids -> [B, L, H].
/// @code
/// BERT/RoBERTa: LN(word[id] + position[pos] + token_type[type]);  DistilBERT: LN(word + position);
/// GPT-2: wte[id] + wpe[pos].
/// @endcode
template <class T>
void Transformer<T>::embed(const Batch& batch, T* out, T* sum, kernels::NormStats<T> stats) const {
  const auto& e = params_.embeddings;
  const Index B = batch.batch_size, L = batch.length, H = config_.hidden_size;
  const bool types = config_.type_vocab_size > 0;
#pragma omp parallel for schedule(static)
  for (Index b = 0; b < B; ++b) {
    Index real_seen = 0;
    for (Index i = 0; i < L; ++i) {
      const Index pos = detail::next_position(batch, config_, b, i, real_seen);
      VectorMap<T> row(out + (b * L + i) * H, H);
      row = e.word.row(batch.id(b, i)).transpose() + e.position.row(pos).transpose();
      if (types) {
        const int t = batch.token_type_ids.empty() ? 0 : batch.token_type_ids[static_cast<std::size_t>(b * L + i)];
        row += e.token_type.row(t).transpose();
      }
    }
  }
  if (e.norm) add_layer_norm_forward<T>(out, nullptr, sum, out, B * L, H, *e.norm, config_.layer_norm_eps, stats);
}

/// Backward of the embedding block: d_out [N, H] (dropout already undone) -> gradients of the tables. The
/// padding row of the word embeddings (and of RoBERTa's positions) gets nothing from the lookup, as in
/// Hugging Face's nn.Embedding(padding_idx). Threads own column blocks and add tokens in order, so the
/// sums are deterministic. work: [N, H].
template <class T>
void Transformer<T>::embed_backward(const Batch& batch, const T* sum, kernels::NormStats<T> stats, T* d_out, T* work,
                                    EmbeddingParams<T>& g) const {
  const auto& e = params_.embeddings;
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = config_.hidden_size;
  const T* d = d_out;
  if (e.norm) {
    layer_norm_backward<T>(sum, stats, d_out, N, H, *e.norm, &*g.norm, work);
    d = work;
  }
  const int word_pad = config_.family == Family::gpt2 ? -1 : config_.pad_token_id;
  const Index position_pad = config_.family == Family::roberta ? config_.pad_token_id : -1;
  const bool types = config_.type_vocab_size > 0;
  for_column_blocks(H, true, [&](Index c0, Index c1) {
    for (Index b = 0; b < B; ++b) {
      Index real_seen = 0;
      for (Index i = 0; i < L; ++i) {
        const T* row = d + (b * L + i) * H;
        const int id = batch.id(b, i);
        const Index p = detail::next_position(batch, config_, b, i, real_seen);
        T* word = id != word_pad ? g.word.data() + id * H : nullptr;
        T* position = p != position_pad ? g.position.data() + p * H : nullptr;
        T* type = nullptr;
        if (types)
          type = g.token_type.data() +
                 (batch.token_type_ids.empty() ? 0 : batch.token_type_ids[static_cast<std::size_t>(b * L + i)]) * H;
        for (Index c = c0; c < c1; ++c) {
          if (word) word[c] += row[c];
          if (position) position[c] += row[c];
          if (type) type[c] += row[c];
        }
      }
    }
  });
}

/// Attention of one layer: buf.qkv [N, 3H] -> attn [B, heads, L, L] (the pattern), buf.ctx [N, H].
/// Training with attention dropout multiplies V by a dropped-out copy of the pattern; `attn` keeps the
/// pattern itself.
template <class T>
void Transformer<T>::attention(int layer, const Batch& batch, T* attn, const Buffers& buf, Workspace& ws,
                               const ForwardOptions<T>& options) const {
  const auto shape = attention_shape(batch);
  const T scale = attention_scale(layer);
  const Index pairs = shape.batch * shape.heads, L2 = shape.map_size();
  const T* qkv = buf.qkv;
  const int* mask = ws.mask.data();
  const bool hooks_here = hooked(options, HookPoint::attn_scores, layer) || hooked(options, HookPoint::pattern, layer);
  const bool policed = options.policies && options.policies->affects_layer(layer);
  const auto maps = TensorView<T>::contiguous(attn, {shape.batch, shape.heads, shape.length, shape.length});
  const kernels::DropoutMask drop = options.training && buf.dropped
                                    ? options.training->mask(config_.attention_dropout, dropout_site::attention(layer))
                                    : kernels::DropoutMask{};
  auto& scratch = ws.attention;
  const int threads = omp_get_max_threads();
  scratch.prepare(shape, threads);
  // ctx of pair p from its pattern, or from a dropped-out copy of it.
  auto context = [&](Index p) {
    const Index b = p / shape.heads, h = p % shape.heads;
    const T* map = attn + shape.map_offset(b, h);
    if (drop.active()) {
      T* copy = buf.dropped + omp_get_thread_num() * L2;
      kernels::dropout_apply(map, copy, L2, shape.map_offset(b, h), drop);
      map = copy;
    }
    kernels::attention_context_from(qkv, map, buf.ctx, shape, b, h, scratch);
  };

  if (!hooks_here && !policed) {
    // The common path: each (b, h) pair goes scores -> softmax -> context while its map is in cache.
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (Index p = 0; p < pairs; ++p) {
      const Index b = p / shape.heads, h = p % shape.heads;
      kernels::attention_scores(qkv, mask, attn, shape, b, h, scale, scratch);
      kernels::attention_softmax(attn, shape, b, h);
      context(p);
    }
    return;
  }
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (Index p = 0; p < pairs; ++p) kernels::attention_scores(qkv, mask, attn, shape, p / shape.heads, p % shape.heads, scale, scratch);
  run_hook(options, batch, ws.mask.data(), HookPoint::attn_scores, layer, maps, 1);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (Index p = 0; p < pairs; ++p) kernels::attention_softmax(attn, shape, p / shape.heads, p % shape.heads);
  if (policed)
    options.policies->apply(layer, attn, mask, shape.batch, static_cast<int>(shape.heads), shape.length, shape.causal);
  if (buf.softmax) std::copy(attn, attn + pairs * L2, buf.softmax);  // the softmax backward reads it
  run_hook(options, batch, ws.mask.data(), HookPoint::pattern, layer, maps, 1);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (Index p = 0; p < pairs; ++p) context(p);
}

/// One block: in [N, H] -> out [N, H] (out may not alias in), attention pattern into attn.
/// @code
/// post-LN (BERT):  mid = LN_1(in + drop(W_O attn(in)));      out = LN_2(mid + drop(MLP(mid)))
/// pre-LN (GPT-2):  mid = in + drop(W_O attn(LN_1(in)));      out = mid + drop(MLP(LN_2(mid)))
/// @endcode
/// (dropout only in training; W_O attn(x) has attention dropout on the pattern)
template <class T>
void Transformer<T>::block_forward(int layer, const Batch& batch, const T* in, T* out, T* attn, const Buffers& buf,
                                   Workspace& ws, const ForwardOptions<T>& options) const {
  const auto& blk = params_.blocks[static_cast<std::size_t>(layer)];
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = config_.hidden_size;
  const Index I = config_.intermediate_size, nh = config_.num_heads, d = config_.head_dim();
  const double eps = config_.layer_norm_eps;
  const bool pre_ln = config_.pre_layer_norm;
  const auto* train = options.training && options.training->train_encoder ? options.training : nullptr;
  auto residual_view = [&](const T* p) { return TensorView<T>::contiguous(const_cast<T*>(p), {B, L, H}); };
  auto dropout = [&](T* x, std::uint64_t site) {
    if (train) kernels::dropout_apply(x, N * H, 0, train->mask(config_.hidden_dropout, site));
  };

  run_hook(options, batch, ws.mask.data(), HookPoint::resid_pre, layer, residual_view(in));
  const T* attn_in = in;
  if (pre_ln) {
    layer_norm_forward<T>(in, buf.normed1, N, H, blk.attn_norm, eps, buf.stats1);
    attn_in = buf.normed1;
  }
  linear_forward<T>(attn_in, N, blk.qkv, buf.qkv, Activation::none, ws.gemm);  // [N, H] -> [N, 3H]
  for (int k = 0; k < 3; ++k)
    run_hook(options, batch, ws.mask.data(), qkv_point(k), layer, qkv_view(buf.qkv, k, B, L), 2);
  attention(layer, batch, attn, buf, ws, options);
  run_hook(options, batch, ws.mask.data(), HookPoint::z, layer, TensorView<T>::contiguous(buf.ctx, {B, L, nh, d}), 2);
  linear_forward<T>(buf.ctx, N, blk.attn_out, buf.proj, Activation::none, ws.gemm);  // [N, H] -> [N, H]
  run_hook(options, batch, ws.mask.data(), HookPoint::attn_out, layer, residual_view(buf.proj));
  dropout(buf.proj, dropout_site::attention_output(layer));

  const T* mlp_in = buf.mid;
  if (pre_ln) {
    // mid = in + attn_out; normed2 = LN_2(mid)
    add_layer_norm_forward<T>(buf.proj, in, buf.mid, buf.normed2, N, H, blk.mlp_norm, eps, buf.stats2);
    run_hook(options, batch, ws.mask.data(), HookPoint::resid_mid, layer, residual_view(buf.mid));
    if (hooked(options, HookPoint::resid_mid, layer))
      layer_norm_forward<T>(buf.mid, buf.normed2, N, H, blk.mlp_norm, eps, buf.stats2);  // hook changed mid
    mlp_in = buf.normed2;
  } else {
    add_layer_norm_forward<T>(buf.proj, in, buf.sum1, buf.mid, N, H, blk.attn_norm, eps, buf.stats1);
    run_hook(options, batch, ws.mask.data(), HookPoint::resid_mid, layer, residual_view(buf.mid));
  }
  linear_forward<T>(mlp_in, N, blk.mlp_in, buf.mlp, config_.activation, ws.gemm, buf.mlp_pre);  // [N, H] -> [N, I]
  run_hook(options, batch, ws.mask.data(), HookPoint::mlp_post, layer, TensorView<T>::contiguous(buf.mlp, {B, L, I}));
  linear_forward<T>(buf.mlp, N, blk.mlp_out, buf.proj, Activation::none, ws.gemm);  // [N, I] -> [N, H]
  run_hook(options, batch, ws.mask.data(), HookPoint::mlp_out, layer, residual_view(buf.proj));
  dropout(buf.proj, dropout_site::mlp_output(layer));
  if (pre_ln) {
    const T* a = buf.mid;
    const T* m = buf.proj;
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < N * H; ++i) out[i] = a[i] + m[i];
  } else {
    add_layer_norm_forward<T>(buf.proj, buf.mid, buf.sum2, out, N, H, blk.mlp_norm, eps, buf.stats2);
  }
  run_hook(options, batch, ws.mask.data(), HookPoint::resid_post, layer, residual_view(out));
}

/// Backward of block_forward, in reverse, over the block's own saved buffers. work holds
/// [N, H] × 3 + [N, I] + [N, 3H] + threads × 2 L² elements. Gradient hooks run where the gradient of
/// their point is complete (see hooks/hooks.hpp); hook_resid_pre and hook_resid_post are the streams
/// between blocks, whose hooks are tape nodes of their own (forward_into).
/// @code
/// post-LN:  d_sum2 = LN_2ᵀ(d_out);  d_mlp = drop(d_sum2) W_2 ⊙ f'(u);  d_mid = d_sum2 + d_mlp W_1
///           d_sum1 = LN_1ᵀ(d_mid);  d_ctx = drop(d_sum1) W_O;  d_qkv = attnᵀ(d_ctx);  d_in = d_sum1 + d_qkv W_QKV
/// pre-LN:   d_mid = d_out + LN_2ᵀ(drop(d_out) W_2 ⊙ f'(u) W_1);  d_ctx = drop(d_mid) W_O
///           d_in = d_mid + LN_1ᵀ(d_qkv W_QKV)
/// @endcode
template <class T>
void Transformer<T>::block_backward(int layer, const Batch& batch, const T* in, const T* attn,
                                    const Buffers& buf, const T* d_out, T* d_in, T* work, const TrainingPass<T>& pass,
                                    const MaskingPolicies<T>* policies, const HookRegistry<T>* hooks,
                                    const int* mask) const {
  const auto& blk = params_.blocks[static_cast<std::size_t>(layer)];
  auto& g = pass.gradients->blocks[static_cast<std::size_t>(layer)];
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = config_.hidden_size;
  const Index I = config_.intermediate_size, nh = config_.num_heads, d = config_.head_dim();
  const bool pre_ln = config_.pre_layer_norm;
  T* d_a = work;             // [N, H]
  T* d_b = d_a + N * H;      // [N, H]
  T* d_c = d_b + N * H;      // [N, H]
  T* d_mlp = d_c + N * H;    // [N, I]
  T* d_qkv = d_mlp + N * I;  // [N, 3H]
  T* attention_work = d_qkv + N * 3 * H;
  auto undo_dropout = [&](const T* from, T* to, std::uint64_t site) {
    kernels::dropout_apply(from, to, N * H, 0, pass.mask(config_.hidden_dropout, site));
  };
  auto gradient_hook = [&](HookPoint point, TensorView<T> gradient, int head_axis = -1) {
    run_gradient_hook(hooks, batch, mask, point, layer, gradient, head_axis);
  };
  auto residual_view = [&](T* p) { return TensorView<T>::contiguous(p, {B, L, H}); };
  auto add_into = [N, H](T* to, const T* from) {
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < N * H; ++i) to[i] += from[i];
  };
  T* d_branch = d_a;  // gradient of a residual branch (dropout undone)
  T* d_mid = d_b;     // gradient of the stream between attention and MLP

  // --- MLP
  if (pre_ln) {
    std::copy(d_out, d_out + N * H, d_mid);  // the residual's share
  } else {
    layer_norm_backward<T>(buf.sum2, buf.stats2, d_out, N, H, blk.mlp_norm, &g.mlp_norm, d_mid);
  }
  undo_dropout(d_mid, d_branch, dropout_site::mlp_output(layer));
  gradient_hook(HookPoint::mlp_out, residual_view(d_branch));
  linear_backward<T>(buf.mlp, d_branch, N, blk.mlp_out, &g.mlp_out, d_mlp);  // [N, H] -> [N, I]
  gradient_hook(HookPoint::mlp_post, TensorView<T>::contiguous(d_mlp, {B, L, I}));
  kernels::activation_backward<T>(buf.mlp_pre, buf.mlp, d_mlp, N * I, config_.activation);
  if (pre_ln) {
    linear_backward<T>(buf.normed2, d_mlp, N, blk.mlp_in, &g.mlp_in, d_c);  // -> d LN_2(mid)
    layer_norm_backward<T>(buf.mid, buf.stats2, d_c, N, H, blk.mlp_norm, &g.mlp_norm, d_mid, /*accumulate=*/true);
  } else {
    linear_backward<T>(buf.mid, d_mlp, N, blk.mlp_in, &g.mlp_in, d_mid, /*accumulate_dx=*/true);
  }
  gradient_hook(HookPoint::resid_mid, residual_view(d_mid));

  // --- attention
  T* d_resid = d_mid;  // the input's gradient through the residual connection
  T* d_ctx = d_c;
  if (!pre_ln) {
    layer_norm_backward<T>(buf.sum1, buf.stats1, d_mid, N, H, blk.attn_norm, &g.attn_norm, d_c);
    d_resid = d_c;
    d_ctx = d_mid;  // free now
  }
  undo_dropout(d_resid, d_branch, dropout_site::attention_output(layer));
  gradient_hook(HookPoint::attn_out, residual_view(d_branch));
  linear_backward<T>(buf.ctx, d_branch, N, blk.attn_out, &g.attn_out, d_ctx);  // [N, H] -> [N, H]
  gradient_hook(HookPoint::z, TensorView<T>::contiguous(d_ctx, {B, L, nh, d}), 2);
  attention_backward(layer, batch, attn, buf, d_ctx, d_qkv, attention_work, pass, policies, hooks, mask);
  for (int k = 0; k < 3; ++k) gradient_hook(qkv_point(k), qkv_view(d_qkv, k, B, L), 2);
  add_into(d_in, d_resid);
  if (pre_ln) {
    linear_backward<T>(buf.normed1, d_qkv, N, blk.qkv, &g.qkv, d_branch);  // -> d LN_1(in)
    layer_norm_backward<T>(in, buf.stats1, d_branch, N, H, blk.attn_norm, &g.attn_norm, d_in, /*accumulate=*/true);
  } else {
    linear_backward<T>(in, d_qkv, N, blk.qkv, &g.qkv, d_in, /*accumulate_dx=*/true);
  }
}

/// d_ctx [N, H] -> d_qkv [N, 3H] for every (b, h) pair in parallel. Without gradient hooks on the maps each
/// pair runs its three stages back to back (kernels::attention_backward); with them, each stage runs over all
/// pairs into buf.d_maps [B, heads, L, L], and the hooks see dP (hook_pattern) and then dS (hook_attn_scores).
template <class T>
void Transformer<T>::attention_backward(int layer, const Batch& batch, const T* attn, const Buffers& buf,
                                        const T* d_ctx, T* d_qkv, T* work, const TrainingPass<T>& pass,
                                        const MaskingPolicies<T>* policies, const HookRegistry<T>* hooks,
                                        const int* mask) const {
  const auto shape = attention_shape(batch);
  const T scale = attention_scale(layer);
  const kernels::DropoutMask drop = pass.mask(config_.attention_dropout, dropout_site::attention(layer));
  const Index L = shape.length, L2 = shape.map_size(), pairs = shape.batch * shape.heads;
  const int threads = omp_get_max_threads();
  // A head whose pattern a masking policy replaced does not depend on Q and K (a disabled head).
  auto through_scores = [&](Index h) { return !(policies && policies->replaces(layer, static_cast<int>(h))); };
  if (!buf.d_maps) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (Index p = 0; p < pairs; ++p) {
      const Index b = p / shape.heads, h = p % shape.heads;
      kernels::attention_backward(buf.qkv, attn + shape.map_offset(b, h), d_ctx, d_qkv, shape, b, h, scale,
                              through_scores(h), drop, shape.map_offset(b, h), work + omp_get_thread_num() * 2 * L2);
    }
    return;
  }
  const auto maps = TensorView<T>::contiguous(buf.d_maps, {shape.batch, shape.heads, L, L});
  // The softmax's own output: the pattern before a pass-through hook changed it.
  const T* softmax = buf.softmax ? buf.softmax : attn;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (Index p = 0; p < pairs; ++p) {
    const Index b = p / shape.heads, h = p % shape.heads, at = shape.map_offset(b, h);
    kernels::attention_backward_values(buf.qkv, attn + at, d_ctx, d_qkv, shape, b, h, drop, at, buf.d_maps + at,
                                   work + omp_get_thread_num() * 2 * L2);
  }
  run_gradient_hook(hooks, batch, mask, HookPoint::pattern, layer, maps, 1);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (Index p = 0; p < pairs; ++p)
    kernels::softmax_backward_rows(softmax + p * L2, buf.d_maps + p * L2, L, T(1));
  run_gradient_hook(hooks, batch, mask, HookPoint::attn_scores, layer, maps, 1);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (Index p = 0; p < pairs; ++p) {
    const Index b = p / shape.heads, h = p % shape.heads;
    T* dS = buf.d_maps + p * L2;
    for (Index i = 0; i < L2; ++i) dS[i] *= scale;
    kernels::attention_backward_scores<T>(buf.qkv, through_scores(h) ? dS : nullptr, d_qkv, shape, b, h);
  }
}

template <class T>
void Transformer<T>::forward_into(const Batch& batch, const ForwardOptions<T>& options, ForwardResult<T>& result) const {
  validate_batch(batch);
  const auto& c = config_;
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = c.hidden_size, I = c.intermediate_size;
  const int layers = c.num_layers;
  if (options.start_layer < 0 || options.start_layer > layers)
    fail("forward: start_layer ", options.start_layer, " outside [0, ", layers, "]");
  if (options.start_layer > 0 && !options.start_hidden)
    fail("forward: start_layer ", options.start_layer, " needs start_hidden (the residual stream entering it)");
  if (options.policies) options.policies->validate(layers, c.num_heads);
  const TrainingPass<T>* pass = options.training;
  if (pass && (!pass->tape || !pass->gradients)) fail("forward: a training pass needs a tape and a gradient set");
  if (pass && options.start_layer > 0) fail("forward: training cannot start at a later layer (start_layer)");
  if (pass && !pass->tape->recording()) fail("forward: the training tape does not record");
  const bool train_encoder = pass && pass->train_encoder;

  Workspace& ws = result.scratch;
  ws.prepare(c, N, B, L, !options.keep_attentions, !options.keep_hidden_states);
  ws.mask.assign(static_cast<std::size_t>(N), 1);
  if (!batch.attention_mask.empty()) ws.mask = batch.attention_mask;
  const auto u = [](Index v) { return static_cast<std::size_t>(v); };
  if (options.start_layer > 0) {  // read before the result's buffers are resized or cleared
    ws.start.resize(N, H);
    std::copy(options.start_hidden, options.start_hidden + N * H, ws.start.data());
  }
  if (options.keep_hidden_states) result.hidden_states.resize({u(layers + 1), u(B), u(L), u(H)});
  else result.hidden_states.resize({0, 0, 0, 0});
  if (options.keep_attentions) result.attentions.resize({u(layers), u(B), u(c.num_heads), u(L), u(L)});
  else result.attentions.resize({0, 0, 0, 0, 0});
  if (options.start_layer > 0) {  // layers below the start are not run: report zeros there
    std::fill(result.attentions.begin(), result.attentions.end(), T(0));
    std::fill(result.hidden_states.begin(), result.hidden_states.end(), T(0));
  }
  result.vars = {};

  autodiff::Tape<T>& tape = pass ? *pass->tape : *ws.inference_tape;
  if (!pass) tape.set_recording(false);
  tape.reset();
  const int threads = omp_get_max_threads();
  // A tape node that runs the gradient hooks of a residual-stream point on the gradient of `stream`
  // [N, H]; the backward reaches it in reverse recording order.
  auto record_gradient_hook = [&](HookPoint point, int layer, const Var& stream) {
    const HookRegistry<T>* hooks = options.hooks;
    if (!hooked_backward(hooks, point, layer)) return;
    const int* mask = ws.mask.data();
    tape.record([this, &batch, hooks, mask, point, layer, stream, B, L, H] {
      run_gradient_hook(hooks, batch, mask, point, layer, TensorView<T>::contiguous(stream.grad(), {B, L, H}));
    });
  };

  // The residual stream entering layer l: hidden_states[l] when kept; else a ping-pong buffer (training:
  // a buffer per layer, since the backward reads every one).
  auto& streams = ws.streams;
  streams.resize(u(layers + 1));
  for (int l = 0; l <= layers; ++l) {
    if (options.keep_hidden_states) streams[u(l)] = result.hidden_states.data() + static_cast<Index>(l) * N * H;
    else if (train_encoder) streams[u(l)] = tape.scratch(N * H);
    else streams[u(l)] = (l % 2 == 0 ? ws.hidden_a : ws.hidden_b).data();
  }
  auto attention_map = [&](int l) -> T* {
    if (options.keep_attentions) return result.attentions.data() + static_cast<Index>(l) * B * c.num_heads * L * L;
    return train_encoder ? tape.scratch(B * c.num_heads * L * L) : ws.scores.data();
  };

  // --- embeddings
  T* embed_sum = nullptr;
  kernels::NormStats<T> embed_stats;
  if (options.start_layer == 0) {
    if (train_encoder && params_.embeddings.norm) {
      embed_sum = tape.scratch(N * H);
      embed_stats = {tape.scratch(N), tape.scratch(N)};
    }
    embed(batch, streams[0], embed_sum, embed_stats);
    if (train_encoder) kernels::dropout_apply(streams[0], N * H, 0, pass->mask(c.embedding_dropout, dropout_site::embeddings));
    run_hook(options, batch, ws.mask.data(), HookPoint::embed, -1, TensorView<T>::contiguous(streams[0], {B, L, H}));
  } else {
    std::copy(ws.start.data(), ws.start.data() + N * H, streams[u(options.start_layer)]);
  }
  auto& stream_vars = ws.stream_vars;
  stream_vars.clear();
  T* work = nullptr;  // backward workspace shared by the nodes (they run one at a time)
  if (train_encoder) {
    for (int l = 0; l <= layers; ++l) stream_vars.push_back(tape.external(streams[u(l)], {N, H}));
    work = tape.scratch(3 * N * H + N * I + 3 * N * H + threads * 2 * L * L);
    const Var first = stream_vars[0];
    tape.record([this, &batch, pass, first, embed_sum, embed_stats, work, N, H] {
      kernels::dropout_apply(first.grad(), N * H, 0, pass->mask(config_.embedding_dropout, dropout_site::embeddings));
      embed_backward(batch, embed_sum, embed_stats, first.grad(), work, pass->gradients->embeddings);
    });
    if (options.start_layer == 0) record_gradient_hook(HookPoint::embed, -1, first);
  }

  // --- blocks
  for (int l = options.start_layer; l < layers; ++l) {
    T* attn = attention_map(l);
    // GPT-2's last block output is not a listed hidden state (HF lists ln_f's output instead).
    const bool last_pre_ln = c.pre_layer_norm && l == layers - 1;
    T* out = last_pre_ln ? ws.last_block.data() : streams[u(l + 1)];
    Buffers buf = ws.shared_buffers();
    if (train_encoder) {
      buf.qkv = tape.scratch(N * 3 * H);
      buf.ctx = tape.scratch(N * H);
      buf.proj = tape.scratch(N * H);
      buf.mid = tape.scratch(N * H);
      buf.mlp_pre = tape.scratch(N * I);
      buf.mlp = tape.scratch(N * I);
      buf.stats1 = {tape.scratch(N), tape.scratch(N)};
      buf.stats2 = {tape.scratch(N), tape.scratch(N)};
      if (c.pre_layer_norm) {
        buf.normed1 = tape.scratch(N * H);
        buf.normed2 = tape.scratch(N * H);
      } else {
        buf.sum1 = tape.scratch(N * H);
        buf.sum2 = tape.scratch(N * H);
      }
      if (pass->dropout && c.attention_dropout > 0) buf.dropped = tape.scratch(threads * L * L);
      // Gradient hooks on the maps read dP and dS of the whole layer; a pass-through pattern hook needs
      // the softmax output it replaced.
      const HookRegistry<T>* hooks = options.hooks;
      if (hooks && !hooks->empty() && hooks->passes_gradient(HookPoint::pattern, l))
        buf.softmax = tape.scratch(B * c.num_heads * L * L);
      if (buf.softmax || hooked_backward(hooks, HookPoint::pattern, l) || hooked_backward(hooks, HookPoint::attn_scores, l))
        buf.d_maps = tape.scratch(B * c.num_heads * L * L);
      record_gradient_hook(HookPoint::resid_pre, l, stream_vars[u(l)]);  // runs after the block's backward
    }
    block_forward(l, batch, streams[u(l)], out, attn, buf, ws, options);
    if (train_encoder) {
      const Var in = stream_vars[u(l)];
      // The block's output gradient: the next stream's, or for GPT-2's last block the ln_f input's.
      Var out_var = last_pre_ln ? tape.external(out, {N, H}) : stream_vars[u(l + 1)];
      if (last_pre_ln) stream_vars.back() = out_var;  // ln_f's node writes into it (below)
      const MaskingPolicies<T>* policies = options.policies;
      const HookRegistry<T>* hooks = options.hooks;
      const int* mask = ws.mask.data();
      tape.record([this, &batch, l, in, out_var, attn, buf, work, pass, policies, hooks, mask] {
        block_backward(l, batch, in.value(), attn, buf, out_var.grad(), in.grad(), work, *pass, policies, hooks, mask);
      });
      record_gradient_hook(HookPoint::resid_post, l, out_var);  // runs before the block's backward
    }
  }

  // --- GPT-2's final LayerNorm: ln_f(last block output) becomes the final listed hidden state
  T* last = streams[u(layers)];
  if (c.pre_layer_norm) {
    const T* block_out = layers > options.start_layer ? ws.last_block.data() : streams[u(layers)];
    kernels::NormStats<T> stats;
    if (train_encoder) stats = {tape.scratch(N), tape.scratch(N)};
    layer_norm_forward<T>(block_out, last, N, H, *params_.task_heads.final_norm, c.layer_norm_eps, stats);
    run_hook(options, batch, ws.mask.data(), HookPoint::ln_final, -1, TensorView<T>::contiguous(last, {B, L, H}));
    if (train_encoder) {
      const Var in = stream_vars.back();  // the last block's output (set above)
      const Var normed = tape.external(last, {N, H});
      stream_vars.back() = normed;
      tape.record([this, pass, in, normed, stats, N, H] {
        layer_norm_backward<T>(in.value(), stats, normed.grad(), N, H, *params_.task_heads.final_norm,
                                    &*pass->gradients->task_heads.final_norm, in.grad(), /*accumulate=*/true);
      });
      record_gradient_hook(HookPoint::ln_final, -1, normed);
    }
  }
  result.last_hidden_state.resize({u(B), u(L), u(H)});
  std::copy(last, last + N * H, result.last_hidden_state.data());
  // The heads read `last` through a Var: the stream's (training the encoder) or one whose gradient
  // nothing consumes (frozen encoder, inference).
  const Var last_var = train_encoder ? stream_vars.back() : tape.external(last, {N, H});
  result.vars.last_hidden_state = last_var;
  heads_forward(batch, last_var, result, options, tape);
}

/// Task heads on the final hidden states last [N, H], written once on autodiff functions: in training
/// they record themselves on the tape; in inference the tape does not record and they just compute.
/// @code
/// pooler        pooled = tanh(W_p h[:, 0] + b_p)                               (BERT, RoBERTa)
/// classifier    logits = W_o drop(act(W_pre drop(x) + b_pre)) + b_o, x = h[:, 0] | pooled | h[:, last]
/// NSP           W_nsp pooled + b_nsp
/// masked LM     LN(act(W_t h + b_t)) · wordᵀ + bias          causal LM   ln_f(h) · wteᵀ
/// @endcode
template <class T>
void Transformer<T>::heads_forward(const Batch& batch, const Var& last, ForwardResult<T>& result,
                                   const ForwardOptions<T>& options, autodiff::Tape<T>& tape) const {
  namespace af = autodiff;
  auto& heads = const_cast<TaskHeadParams<T>&>(params_.task_heads);  // parameters are only read
  auto& embeddings = const_cast<EmbeddingParams<T>&>(params_.embeddings);
  const TrainingPass<T>* pass = options.training;
  TaskHeadParams<T>* gh = pass ? &pass->gradients->task_heads : nullptr;
  const auto& c = config_;
  const Index B = batch.batch_size, L = batch.length, H = c.hidden_size, V = c.vocab_size;
  // Outputs this call does not produce are emptied, so a reused result never shows stale values.
  const bool on = options.compute_heads;
  const bool lm = on && (heads.masked_lm || heads.causal_lm);
  const bool selected = lm && !options.logit_positions.empty();
  if (!(on && heads.pooler)) result.pooled.resize({0, 0});
  if (!(on && heads.classifier)) result.sequence_logits.resize({0, 0});
  if (!(on && heads.next_sentence)) result.next_sentence_logits.resize({0, 0});
  if (!selected) result.selected_logits.resize({0, 0});
  if (!lm || selected || !options.token_logits) result.token_logits.resize({0, 0, 0});
  if (!on) return;
  const auto u = [](Index v) { return static_cast<std::size_t>(v); };
  auto linear_vars = [&](Linear<T>& p, Linear<T>* g) {
    return std::pair{af::parameter(tape, p.weight, g ? &g->weight : nullptr),
                     p.has_bias() ? af::parameter(tape, p.bias, g ? &g->bias : nullptr) : Var{}};
  };
  auto drop = [&](const Var& x, double p, std::uint64_t site) {
    return pass ? af::dropout(tape, x, pass->mask(p, site)) : x;
  };
  // Row indices the heads gather, kept until backward: [0, B) first tokens, [B, 2B) last tokens, then
  // the selected logit positions.
  auto& rows = result.scratch.rows;
  const Index P = static_cast<Index>(options.logit_positions.size());
  rows.resize(u(2 * B + P));
  for (Index b = 0; b < B; ++b) {
    rows[u(b)] = b * L;
    rows[u(B + b)] = b * L + last_token(batch, b);
  }
  for (Index r = 0; r < P; ++r) {
    const auto [b, i] = options.logit_positions[u(r)];
    if (b < 0 || b >= B || i < 0 || i >= L)
      fail("logit_positions[", r, "] = (", b, ", ", i, ") is outside the batch [", B, ", ", L, "]");
    rows[u(2 * B + r)] = b * L + i;
  }

  Var pooled;
  if (heads.pooler) {
    if (B == 0 || L == 0) fail("forward: the pooler needs at least one token per row (batch ", B, " x ", L, ")");
    const Var first = af::gather_rows(tape, last, rows.data(), B);
    result.pooled.resize({u(B), u(H)});
    const auto [w, b] = linear_vars(*heads.pooler, gh ? &*gh->pooler : nullptr);
    pooled = af::linear(tape, first, w, b, Activation::tanh, tape.external(result.pooled.data(), {B, H}));
    result.vars.pooled = pooled;
  }
  if (auto& cls = heads.classifier) {
    if (L == 0) fail("forward: a sequence classifier needs at least one token per row");
    auto* gc = gh ? &*gh->classifier : nullptr;
    Var x = cls->input == ClassifierInput::pooled      ? pooled
            : cls->input == ClassifierInput::last_token ? af::gather_rows(tape, last, rows.data() + B, B)
                                                       : af::gather_rows(tape, last, rows.data(), B);
    if (cls->pre) {
      if (c.family == Family::roberta) x = drop(x, c.classifier_dropout, dropout_site::classifier_input);
      const auto [w, b] = linear_vars(*cls->pre, gc ? &*gc->pre : nullptr);
      x = af::linear(tape, x, w, b, cls->pre_activation);
    }
    x = drop(x, c.classifier_dropout, dropout_site::classifier_hidden);
    const Index labels = cls->out.out();
    result.sequence_logits.resize({u(B), u(labels)});
    const auto [w, b] = linear_vars(cls->out, gc ? &gc->out : nullptr);
    result.vars.sequence_logits = af::linear(tape, x, w, b, Activation::none,
                                             tape.external(result.sequence_logits.data(), {B, labels}));
  }
  if (heads.next_sentence) {
    result.next_sentence_logits.resize({u(B), u(2)});
    const auto [w, b] = linear_vars(*heads.next_sentence, gh ? &*gh->next_sentence : nullptr);
    result.vars.next_sentence_logits =
        af::linear(tape, pooled, w, b, Activation::none, tape.external(result.next_sentence_logits.data(), {B, 2}));
  }

  if (!lm || (!selected && !options.token_logits)) return;
  // Rows to decode: all B·L positions, or the selected ones.
  Var x = selected ? af::gather_rows(tape, last, rows.data() + 2 * B, P) : last;
  Var bias;
  if (auto& mlm = heads.masked_lm) {
    auto* gm = gh ? &*gh->masked_lm : nullptr;
    const auto [w, b] = linear_vars(mlm->transform, gm ? &gm->transform : nullptr);
    x = af::linear(tape, x, w, b, c.activation);
    x = af::layer_norm(tape, x, af::parameter(tape, mlm->norm.weight, gm ? &gm->norm.weight : nullptr),
                       af::parameter(tape, mlm->norm.bias, gm ? &gm->norm.bias : nullptr), c.layer_norm_eps);
    bias = af::parameter(tape, mlm->decoder_bias, gm ? &gm->decoder_bias : nullptr);
  }
  // [R, H] x [V, H]ᵀ -> [R, V], the decoder tied to the word embeddings (its gradient adds to theirs)
  Var decoder = af::parameter(tape, embeddings.word, pass ? &pass->gradients->embeddings.word : nullptr);
  Index columns = V;
  if (!options.decoder_rows.empty()) {
    // Sampled softmax: [R, H] x [S, H]ᵀ + offsets -> [R, S] over the candidate ids only.
    if (bias.valid()) fail("forward: decoder_rows needs a bias-free decoder (GPT-2), this model's has a bias");
    if (options.decoder_offsets.size() != options.decoder_rows.size())
      fail("forward: ", options.decoder_rows.size(), " decoder_rows but ", options.decoder_offsets.size(), " decoder_offsets");
    auto& ws = result.scratch;
    ws.decoder_rows = options.decoder_rows;
    ws.decoder_offsets.assign(options.decoder_offsets.begin(), options.decoder_offsets.end());
    columns = static_cast<Index>(ws.decoder_rows.size());
    decoder = af::gather_rows(tape, decoder, ws.decoder_rows.data(), columns);
    bias = tape.external(ws.decoder_offsets.data(), {columns});  // a constant: its gradient goes nowhere
  }
  Var logits;
  if (selected) {
    result.selected_logits.resize({u(P), u(columns)});
    logits = tape.external(result.selected_logits.data(), {P, columns});
  } else {
    result.token_logits.resize({u(B), u(L), u(columns)});
    logits = tape.external(result.token_logits.data(), {B * L, columns});
  }
  logits = af::linear(tape, x, decoder, bias, Activation::none, logits);
  (selected ? result.vars.selected_logits : result.vars.token_logits) = logits;
}

}  // namespace darkbert

#include "detail/transformer_checkpoint.hpp"  // load, save, random, task_heads, zero_gradients
