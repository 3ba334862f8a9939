#pragma once
// The transformer: one definition for BERT, RoBERTa, DistilBERT (post-LN encoders) and GPT-2 (pre-LN,
// causal), loaded from a Hugging Face checkpoint folder and run on a padded batch.
//
//   auto model = darkbert::Transformer<float>::load("bert-base-uncased/");
//   auto out = model.forward(batch);            // every hidden state and per-head attention map
//   out.attentions;                              // [layers, B, heads, L, L]
//
// The forward pass is a sequence of kernels from model/ops/ over a few preallocated buffers, with a hook
// test at every named point (hooks/hook_point.hpp). Each kernel keeps its shapes in a comment; the same
// code path is used for inference, analysis (hooks, policies) and, later, training.

#include <omp.h>  // omp_get_max_threads

#include <cmath>       // std::sqrt, std::tanh
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ofstream
#include <map>         // std::map
#include <random>      // std::mt19937_64, std::normal_distribution
#include <set>         // std::set
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../core/tensor.hpp"
#include "../core/xwt_gemm.hpp"
#include "../hooks/hooks.hpp"
#include "../hooks/masking_policy.hpp"
#include "../io/checkpoint.hpp"
#include "batch.hpp"
#include "config.hpp"
#include "ops/activation.hpp"
#include "ops/attention.hpp"
#include "ops/layer_norm.hpp"
#include "ops/linear.hpp"
#include "parameter_names.hpp"
#include "parameters.hpp"
#include "task_heads.hpp"

namespace darkbert {

template <class T>
struct ForwardOptions {
  bool keep_hidden_states = true;  // hidden_states [layers+1, B, L, H]
  bool keep_attentions = true;     // attentions [layers, B, heads, L, L]
  bool compute_heads = true;       // pooler / classifier / NSP / LM logits when the model has them
  bool token_logits = true;        // the [B, L, V] LM / MLM logits (the largest output)
  // Compute MLM / LM logits only at these (batch, position) pairs, into `selected_logits` [P, V]
  // (pretraining needs only the masked positions). Empty = all positions (if token_logits).
  std::vector<std::pair<Index, Index>> logit_positions;
  const HookRegistry<T>* hooks = nullptr;
  const MaskingPolicies<T>* policies = nullptr;
  // Prefix caching: start at block `start_layer` from the residual stream `start_hidden` [B, L, H]
  // entering it (e.g. hidden_states[start_layer] of an earlier run of the same batch). Blocks below are
  // not run; their hidden states and attentions are left zero in the result. (For GPT-2 the last listed
  // hidden state is after ln_f, so resuming at start_layer == num_layers needs the raw block output.)
  int start_layer = 0;
  const T* start_hidden = nullptr;
};

namespace detail {
// Buffers of one forward pass, kept in ForwardResult so that running again into the same result object
// allocates nothing (and touches no fresh pages).
template <class T>
struct ForwardScratch {
  Matrix<T> qkv;     // [N, 3H]
  Matrix<T> ctx;     // [N, H]  per-head context, heads side by side
  Matrix<T> proj;    // [N, H]  attention or MLP output projection
  Matrix<T> mid;     // [N, H]  residual stream between attention and MLP
  Matrix<T> normed;  // [N, H]  pre-LN input of attention / MLP
  Matrix<T> mlp;     // [N, I]
  Matrix<T> last_block;          // [N, H] GPT-2: output of the last block, before ln_f
  std::vector<T> scores;         // [B, heads, L, L] when attention maps are not kept
  Matrix<T> hidden_a, hidden_b;  // [N, H] ping-pong residual stream when hidden states are not kept
  std::vector<int> mask;         // [B, L] attention mask (all ones if the batch has none)
  XwtScratch gemm;               // packed activations of the linear layers
  ops::AttentionScratch attention;  // per-thread memory of the per-head products

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
};
}  // namespace detail

template <class T>
struct ForwardResult {
  Tensor<T, 4> hidden_states;      // [layers+1, B, L, H]; [0] = embeddings; GPT-2: last after ln_f
  Tensor<T, 5> attentions;         // [layers, B, heads, L, L]
  Tensor<T, 3> last_hidden_state;  // [B, L, H] (GPT-2: after ln_f)
  Tensor<T, 2> pooled;             // [B, H]        BERT/RoBERTa pooler
  Tensor<T, 2> sequence_logits;    // [B, labels]   sequence classification / regression
  Tensor<T, 3> token_logits;       // [B, L, V]     masked-LM or causal-LM logits
  Tensor<T, 2> selected_logits;    // [P, V]        logits at ForwardOptions::logit_positions
  Tensor<T, 2> next_sentence_logits;  // [B, 2]     BERT NSP

  // The embedding block output = hidden_states[0], [B, L, H].
  auto embeddings() const { return xt::view(hidden_states, 0); }

  detail::ForwardScratch<T> scratch;  // reused by forward_into; not part of the results
};

template <class T>
class Transformer {
 public:
  using Scalar = T;

  Transformer(ModelConfig config, TransformerParams<T> params)
      : config_(std::move(config)), params_(std::move(params)) {}

  // Loads config.json + model.safetensors (or a sharded index) from a Hugging Face folder.
  static Transformer load(const std::filesystem::path& dir);

  // Writes config.json + model.safetensors (F32 or F64 as T) in Hugging Face layout, under the family's
  // own tensor names (prefixed for task models, as Hugging Face saves them), readable by load().
  void save(const std::filesystem::path& dir) const;

  // A model of the given shape with seeded random weights (N(0, 0.02); LayerNorm 1 and 0).
  static Transformer random(const ModelConfig& config, const TaskHeads& heads, std::uint64_t seed);

  const ModelConfig& config() const { return config_; }
  const TransformerParams<T>& params() const { return params_; }
  TransformerParams<T>& params() { return params_; }
  // Checkpoint tensors the model did not use (extra heads, unknown entries), for the caller to report.
  const std::vector<std::string>& unused_tensors() const { return unused_; }

  ForwardResult<T> forward(const Batch& batch, const ForwardOptions<T>& options = {}) const {
    ForwardResult<T> result;
    forward_into(batch, options, result);
    return result;
  }
  // Same, reusing the buffers of `result` from an earlier call (no allocation when shapes repeat).
  void forward_into(const Batch& batch, const ForwardOptions<T>& options, ForwardResult<T>& result) const;

  // The position GPT-2's classifier reads in row b: the rightmost token that is not pad_token_id (as
  // Hugging Face's GPT2ForSequenceClassification); without a pad token, the last real token by the mask.
  Index last_token(const Batch& batch, Index b) const {
    Index last = 0;
    for (Index i = 0; i < batch.length; ++i)
      if (config_.pad_token_id >= 0 ? batch.id(b, i) != config_.pad_token_id : batch.mask(b, i) != 0) last = i;
    return last;
  }

  // The embedding block alone: [B, L] ids -> out [B, L, H] (what hook_embed sees). No validation.
  void embed(const Batch& batch, T* out) const;

 private:
  using Workspace = detail::ForwardScratch<T>;
  void validate_batch(const Batch& batch) const;
  void block_forward(int layer, const Batch& batch, const T* in, T* out, T* attn, Workspace& ws,
                     const ForwardOptions<T>& options) const;
  void attention(int layer, const Batch& batch, T* attn, Workspace& ws, const ForwardOptions<T>& options) const;
  void heads_forward(const Batch& batch, const T* last, ForwardResult<T>& result,
                     const ForwardOptions<T>& options) const;
  // Whether any registered hook fires at (point, layer); one pointer test when there are none.
  static bool hooked(const ForwardOptions<T>& options, HookPoint point, int layer) {
    return options.hooks && !options.hooks->empty() && options.hooks->active(point, layer);
  }
  void run_hook(const ForwardOptions<T>& options, const Batch& batch, const int* batch_mask, HookPoint point,
                int layer, TensorView<T> view, int head_axis = -1) const {
    if (!hooked(options, point, layer)) return;
    options.hooks->run(HookContext<T>{point, layer, -1, view, batch_mask, batch.batch_size, batch.length, config_.causal},
                       head_axis);
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

// Embedding block: [B, L] ids -> [B, L, H].
//   BERT/RoBERTa: LN(word[id] + position[pos] + token_type[type]);  DistilBERT: LN(word + position);
//   GPT-2: wte[id] + wpe[pos].   RoBERTa positions: pad + 1 + (index among real tokens), padding -> pad.
template <class T>
void Transformer<T>::embed(const Batch& batch, T* out) const {
  const auto& e = params_.embeddings;
  const Index B = batch.batch_size, L = batch.length, H = config_.hidden_size;
  const bool roberta = config_.family == Family::roberta;
  const bool types = config_.type_vocab_size > 0;
#pragma omp parallel for schedule(static)
  for (Index b = 0; b < B; ++b) {
    Index real_seen = 0;
    for (Index i = 0; i < L; ++i) {
      const int id = batch.id(b, i);
      Index pos = i;
      if (roberta) {
        const bool real = id != config_.pad_token_id;
        real_seen += real;
        pos = real ? config_.pad_token_id + real_seen : config_.pad_token_id;
      }
      VectorMap<T> row(out + (b * L + i) * H, H);
      row = e.word.row(id).transpose() + e.position.row(pos).transpose();
      if (types) {
        const int t = batch.token_type_ids.empty() ? 0 : batch.token_type_ids[static_cast<std::size_t>(b * L + i)];
        row += e.token_type.row(t).transpose();
      }
    }
  }
  if (e.norm) ops::layer_norm_forward<T>(out, out, B * L, H, *e.norm, config_.layer_norm_eps);
}

// Attention of one layer: ws.qkv [N, 3H] -> attn [B, heads, L, L] (the pattern), ws.ctx [N, H].
template <class T>
void Transformer<T>::attention(int layer, const Batch& batch, T* attn, Workspace& ws,
                               const ForwardOptions<T>& options) const {
  const ops::AttentionShape shape{batch.batch_size, batch.length, config_.num_heads, config_.head_dim(),
                                  config_.causal};
  T scale = T(1) / std::sqrt(static_cast<T>(shape.head_dim));
  if (config_.scale_by_inverse_layer_idx) scale /= static_cast<T>(layer + 1);
  const Index pairs = shape.batch * shape.heads;
  const T* qkv = ws.qkv.data();
  const int* mask = ws.mask.data();
  const bool hooks_here = hooked(options, HookPoint::attn_scores, layer) || hooked(options, HookPoint::pattern, layer);
  const bool policed = options.policies && options.policies->affects_layer(layer);
  const auto maps = TensorView<T>::contiguous(attn, {shape.batch, shape.heads, shape.length, shape.length});
  auto& scratch = ws.attention;
  scratch.prepare(shape, omp_get_max_threads());

  if (!hooks_here && !policed) {
    // The common path: each (b, h) pair goes scores -> softmax -> context while its map is in cache.
#pragma omp parallel for schedule(dynamic)
    for (Index p = 0; p < pairs; ++p) {
      const Index b = p / shape.heads, h = p % shape.heads;
      ops::attention_scores(qkv, mask, attn, shape, b, h, scale, scratch);
      ops::attention_softmax(attn, shape, b, h);
      ops::attention_context(qkv, attn, ws.ctx.data(), shape, b, h, scratch);
    }
    return;
  }
#pragma omp parallel for schedule(dynamic)
  for (Index p = 0; p < pairs; ++p) ops::attention_scores(qkv, mask, attn, shape, p / shape.heads, p % shape.heads, scale, scratch);
  run_hook(options, batch, ws.mask.data(), HookPoint::attn_scores, layer, maps, 1);
#pragma omp parallel for schedule(dynamic)
  for (Index p = 0; p < pairs; ++p) ops::attention_softmax(attn, shape, p / shape.heads, p % shape.heads);
  if (policed)
    options.policies->apply(layer, attn, mask, shape.batch, static_cast<int>(shape.heads), shape.length, shape.causal);
  run_hook(options, batch, ws.mask.data(), HookPoint::pattern, layer, maps, 1);
#pragma omp parallel for schedule(dynamic)
  for (Index p = 0; p < pairs; ++p) ops::attention_context(qkv, attn, ws.ctx.data(), shape, p / shape.heads, p % shape.heads, scratch);
}

// One block: in [N, H] -> out [N, H] (out may not alias in), attention pattern into attn.
//   post-LN (BERT):  mid = LN(in + W_O attn(in));        out = LN(mid + MLP(mid))
//   pre-LN (GPT-2):  mid = in + W_O attn(LN_1(in));      out = mid + MLP(LN_2(mid))
template <class T>
void Transformer<T>::block_forward(int layer, const Batch& batch, const T* in, T* out, T* attn, Workspace& ws,
                                   const ForwardOptions<T>& options) const {
  const auto& blk = params_.blocks[static_cast<std::size_t>(layer)];
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = config_.hidden_size;
  const Index I = config_.intermediate_size, nh = config_.num_heads, d = config_.head_dim();
  const double eps = config_.layer_norm_eps;
  const bool pre_ln = config_.pre_layer_norm;
  auto residual_view = [&](const T* p) { return TensorView<T>::contiguous(const_cast<T*>(p), {B, L, H}); };

  run_hook(options, batch, ws.mask.data(), HookPoint::resid_pre, layer, residual_view(in));
  const T* attn_in = in;
  if (pre_ln) {
    ops::layer_norm_forward<T>(in, ws.normed.data(), N, H, blk.attn_norm, eps);
    attn_in = ws.normed.data();
  }
  ops::linear_forward<T>(attn_in, N, blk.qkv, ws.qkv.data(), Activation::none, ws.gemm);  // [N, H] -> [N, 3H]
  for (int k = 0; k < 3; ++k) {
    // [B, L, heads, d] views into the fused qkv buffer
    TensorView<T> v;
    v.data = ws.qkv.data() + k * H;
    v.rank = 4;
    v.shape = {B, L, nh, d};
    v.strides = {L * 3 * H, 3 * H, d, 1};
    run_hook(options, batch, ws.mask.data(), k == 0 ? HookPoint::q : k == 1 ? HookPoint::k : HookPoint::v, layer, v, 2);
  }
  attention(layer, batch, attn, ws, options);
  run_hook(options, batch, ws.mask.data(), HookPoint::z, layer, TensorView<T>::contiguous(ws.ctx.data(), {B, L, nh, d}), 2);
  ops::linear_forward<T>(ws.ctx.data(), N, blk.attn_out, ws.proj.data(), Activation::none, ws.gemm);  // [N, H] -> [N, H]
  run_hook(options, batch, ws.mask.data(), HookPoint::attn_out, layer, residual_view(ws.proj.data()));

  const T* mlp_in = ws.mid.data();
  if (pre_ln) {
    // mid = in + attn_out; normed = LN_2(mid)
    ops::add_layer_norm_forward<T>(ws.proj.data(), in, ws.mid.data(), ws.normed.data(), N, H, blk.mlp_norm, eps);
    run_hook(options, batch, ws.mask.data(), HookPoint::resid_mid, layer, residual_view(ws.mid.data()));
    if (hooked(options, HookPoint::resid_mid, layer))
      ops::layer_norm_forward<T>(ws.mid.data(), ws.normed.data(), N, H, blk.mlp_norm, eps);  // hook changed mid
    mlp_in = ws.normed.data();
  } else {
    ops::add_layer_norm_forward<T>(ws.proj.data(), in, nullptr, ws.mid.data(), N, H, blk.attn_norm, eps);
    run_hook(options, batch, ws.mask.data(), HookPoint::resid_mid, layer, residual_view(ws.mid.data()));
  }
  ops::linear_forward<T>(mlp_in, N, blk.mlp_in, ws.mlp.data(), config_.activation, ws.gemm);  // [N, H] -> [N, I]
  run_hook(options, batch, ws.mask.data(), HookPoint::mlp_post, layer, TensorView<T>::contiguous(ws.mlp.data(), {B, L, I}));
  ops::linear_forward<T>(ws.mlp.data(), N, blk.mlp_out, ws.proj.data(), Activation::none, ws.gemm);  // [N, I] -> [N, H]
  run_hook(options, batch, ws.mask.data(), HookPoint::mlp_out, layer, residual_view(ws.proj.data()));
  if (pre_ln) {
    const T* a = ws.mid.data();
    const T* m = ws.proj.data();
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < N * H; ++i) out[i] = a[i] + m[i];
  } else {
    ops::add_layer_norm_forward<T>(ws.proj.data(), ws.mid.data(), nullptr, out, N, H, blk.mlp_norm, eps);
  }
  run_hook(options, batch, ws.mask.data(), HookPoint::resid_post, layer, residual_view(out));
}

template <class T>
void Transformer<T>::forward_into(const Batch& batch, const ForwardOptions<T>& options, ForwardResult<T>& result) const {
  validate_batch(batch);
  const auto& c = config_;
  const Index B = batch.batch_size, L = batch.length, N = B * L, H = c.hidden_size;
  const int layers = c.num_layers;
  if (options.start_layer < 0 || options.start_layer > layers)
    fail("forward: start_layer ", options.start_layer, " outside [0, ", layers, "]");
  if (options.start_layer > 0 && !options.start_hidden)
    fail("forward: start_layer ", options.start_layer, " needs start_hidden (the residual stream entering it)");
  if (options.policies) options.policies->validate(layers, c.num_heads);

  Workspace& ws = result.scratch;
  ws.prepare(c, N, B, L, !options.keep_attentions, !options.keep_hidden_states);
  ws.mask.assign(static_cast<std::size_t>(N), 1);
  if (!batch.attention_mask.empty()) ws.mask = batch.attention_mask;
  const auto u = [](Index v) { return static_cast<std::size_t>(v); };
  if (options.keep_hidden_states) result.hidden_states.resize({u(layers + 1), u(B), u(L), u(H)});
  else result.hidden_states.resize({0, 0, 0, 0});
  if (options.keep_attentions) result.attentions.resize({u(layers), u(B), u(c.num_heads), u(L), u(L)});
  else result.attentions.resize({0, 0, 0, 0, 0});
  if (options.start_layer > 0) {  // layers below the start are not run: report zeros there
    std::fill(result.attentions.begin(), result.attentions.end(), T(0));
    std::fill(result.hidden_states.begin(), result.hidden_states.end(), T(0));
  }

  // The residual stream entering layer l: hidden_states[l] when kept, else a ping-pong buffer.
  auto stream = [&](int l) -> T* {
    if (options.keep_hidden_states) return result.hidden_states.data() + static_cast<Index>(l) * N * H;
    return (l % 2 == 0 ? ws.hidden_a : ws.hidden_b).data();
  };
  if (options.start_layer == 0) {
    embed(batch, stream(0));
    run_hook(options, batch, ws.mask.data(), HookPoint::embed, -1, TensorView<T>::contiguous(stream(0), {B, L, H}));
  } else {
    std::copy(options.start_hidden, options.start_hidden + N * H, stream(options.start_layer));
  }
  for (int l = options.start_layer; l < layers; ++l) {
    T* attn = options.keep_attentions ? result.attentions.data() + static_cast<Index>(l) * B * c.num_heads * L * L
                                      : ws.scores.data();
    // GPT-2's last block output is not a listed hidden state (HF lists ln_f's output instead).
    T* out = c.pre_layer_norm && l == layers - 1 ? ws.last_block.data() : stream(l + 1);
    block_forward(l, batch, stream(l), out, attn, ws, options);
  }
  const T* last = stream(layers);
  if (c.pre_layer_norm) {
    // ln_f(last block output) becomes the final listed hidden state (in place if no block ran).
    const T* block_out = layers > options.start_layer ? ws.last_block.data() : stream(layers);
    T* normed = stream(layers);
    ops::layer_norm_forward<T>(block_out, normed, N, H, *params_.task_heads.final_norm, c.layer_norm_eps);
    run_hook(options, batch, ws.mask.data(), HookPoint::ln_final, -1, TensorView<T>::contiguous(normed, {B, L, H}));
    last = normed;
  }
  result.last_hidden_state.resize({u(B), u(L), u(H)});
  std::copy(last, last + N * H, result.last_hidden_state.data());
  heads_forward(batch, last, result, options);
}

// Task heads on the final hidden states last [N, H].
template <class T>
void Transformer<T>::heads_forward(const Batch& batch, const T* last, ForwardResult<T>& result,
                                   const ForwardOptions<T>& options) const {
  const auto& heads = params_.task_heads;
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
  // First token of every sequence: [B, H]
  Matrix<T> first(B, H);
  for (Index b = 0; b < B; ++b) first.row(b) = ConstMatrixMap<T>(last + b * L * H, 1, H);

  Matrix<T> pooled;
  if (heads.pooler) {
    pooled.resize(B, H);
    ops::linear_forward<T>(first.data(), B, *heads.pooler, pooled.data(), Activation::tanh);
    result.pooled.resize({size_t(B), size_t(H)});
    std::copy(pooled.data(), pooled.data() + B * H, result.pooled.data());
  }
  if (const auto& cls = heads.classifier) {
    Matrix<T> input;
    switch (cls->input) {
      case ClassifierInput::first_token: input = first; break;
      case ClassifierInput::pooled: input = pooled; break;
      case ClassifierInput::last_token:
        input.resize(B, H);
        for (Index b = 0; b < B; ++b)
          input.row(b) = ConstMatrixMap<T>(last + (b * L + last_token(batch, b)) * H, 1, H);
        break;
    }
    if (cls->pre) {
      Matrix<T> hidden(B, cls->pre->out());
      ops::linear_forward<T>(input.data(), B, *cls->pre, hidden.data(), cls->pre_activation);
      input = std::move(hidden);
    }
    const Index labels = cls->out.out();
    result.sequence_logits.resize({size_t(B), size_t(labels)});
    ops::linear_forward<T>(input.data(), B, cls->out, result.sequence_logits.data());
  }
  if (heads.next_sentence) {
    result.next_sentence_logits.resize({size_t(B), size_t(2)});
    ops::linear_forward<T>(pooled.data(), B, *heads.next_sentence, result.next_sentence_logits.data());
  }

  if (!lm || (!selected && !options.token_logits)) return;
  // Rows to decode: all B*L positions, or the selected ones.
  Matrix<T> rows;
  if (selected) {
    rows.resize(static_cast<Index>(options.logit_positions.size()), H);
    for (std::size_t r = 0; r < options.logit_positions.size(); ++r) {
      const auto [b, i] = options.logit_positions[r];
      if (b < 0 || b >= B || i < 0 || i >= L)
        fail("logit_positions[", r, "] = (", b, ", ", i, ") is outside the batch [", B, ", ", L, "]");
      rows.row(static_cast<Index>(r)) = ConstMatrixMap<T>(last + (b * L + i) * H, 1, H);
    }
  }
  const Index R = selected ? rows.rows() : B * L;
  const T* decoder_in = selected ? rows.data() : last;
  Matrix<T> transformed;
  if (heads.masked_lm) {
    const auto& mlm = heads.masked_lm;
    // transform -> activation -> LayerNorm, then the tied decoder + bias
    transformed.resize(R, H);
    ops::linear_forward<T>(decoder_in, R, mlm->transform, transformed.data(), c.activation);
    ops::layer_norm_forward<T>(transformed.data(), transformed.data(), R, H, mlm->norm, c.layer_norm_eps);
    decoder_in = transformed.data();
  }
  T* logits;
  if (selected) {
    result.selected_logits.resize({size_t(R), size_t(V)});
    logits = result.selected_logits.data();
  } else {
    result.token_logits.resize({size_t(B), size_t(L), size_t(V)});
    logits = result.token_logits.data();
  }
  // [R, H] x [V, H]^T -> [R, V], plus the masked-LM decoder bias
  const T* decoder_bias = heads.masked_lm ? heads.masked_lm->decoder_bias.data() : nullptr;
  xwt_gemm<T>(decoder_in, R, H, params_.embeddings.word.data(), V, logits, result.scratch.gemm, [&](T* part, Index first, Index n) {
    if (decoder_bias) ops::bias_epilogue(part, decoder_bias + first, n, Activation::none);
  });
}

}  // namespace darkbert

#include "detail/transformer_checkpoint.hpp"  // load, save, random
