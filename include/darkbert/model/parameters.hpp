#pragma once
// The parameters of a transformer, one struct per building block. Every family is laid out the same way:
// nn.Linear weights are stored [out, in] (GPT-2's Conv1D [in, out] is transposed on load), and the three
// attention projections are fused into one [3H, H] matrix so Q, K and V come out of a single product.

#include <optional>  // std::optional
#include <vector>    // std::vector

#include "../core/matrix.hpp"
#include "ops/activation.hpp"  // Activation

namespace darkbert {

// y = x Wᵀ + b;  weight [out, in], bias [out] (empty for a bias-free layer such as GPT-2's `score`).
template <class T>
struct Linear {
  Matrix<T> weight;
  Vector<T> bias;

  Linear() = default;
  Linear(Index in, Index out, bool with_bias = true)
      : weight(Matrix<T>::Zero(out, in)), bias(Vector<T>::Zero(with_bias ? out : 0)) {}
  bool has_bias() const { return bias.size() != 0; }
  Index in() const { return weight.cols(); }
  Index out() const { return weight.rows(); }
};

template <class T>
struct LayerNormParams {
  Vector<T> weight;  // gamma
  Vector<T> bias;    // beta

  LayerNormParams() = default;
  explicit LayerNormParams(Index n) : weight(Vector<T>::Ones(n)), bias(Vector<T>::Zero(n)) {}
};

template <class T>
struct EmbeddingParams {
  Matrix<T> word;        // [vocab, H]
  Matrix<T> position;    // [max_positions, H]
  Matrix<T> token_type;  // [type_vocab, H]; 0 rows when the family has no token types
  std::optional<LayerNormParams<T>> norm;  // BERT/RoBERTa/DistilBERT; GPT-2 has none
};

// One transformer block. In a post-LN block (BERT) attn_norm follows attention + residual and mlp_norm
// follows the MLP + residual; in a pre-LN block (GPT-2: ln_1, ln_2) they precede attention and the MLP.
template <class T>
struct BlockParams {
  Linear<T> qkv;        // [3H, H]: rows [0, H) query, [H, 2H) key, [2H, 3H) value
  Linear<T> attn_out;   // [H, H]
  LayerNormParams<T> attn_norm;
  Linear<T> mlp_in;     // [I, H]
  Linear<T> mlp_out;    // [H, I]
  LayerNormParams<T> mlp_norm;
};

// Which row of the final hidden states a sequence classifier reads.
enum class ClassifierInput {
  first_token,  // DistilBERT, RoBERTa: h[:, 0]
  pooled,       // BERT: the pooler output tanh(W h[:, 0] + b)
  last_token,   // GPT-2: h at each row's last non-padding token (found from pad_token_id)
};

// Sequence classification / regression: out(act(pre(input))).
template <class T>
struct ClassifierParams {
  ClassifierInput input = ClassifierInput::first_token;
  std::optional<Linear<T>> pre;  // DistilBERT pre_classifier (relu), RoBERTa classifier.dense (tanh)
  Activation pre_activation = Activation::none;
  Linear<T> out;                 // [labels, H]; GPT-2's `score` has no bias
};

// Masked-LM head: decoder(norm(act(transform(h)))) + bias, decoder tied to the word embeddings.
template <class T>
struct MaskedLmParams {
  Linear<T> transform;   // [H, H]
  LayerNormParams<T> norm;
  Vector<T> decoder_bias;  // [vocab]
};

// The task heads on top of the encoder (as opposed to the attention heads inside it).
template <class T>
struct TaskHeadParams {
  std::optional<LayerNormParams<T>> final_norm;  // GPT-2 ln_f
  std::optional<Linear<T>> pooler;               // BERT/RoBERTa: tanh(W h[:, 0] + b)
  std::optional<ClassifierParams<T>> classifier;
  std::optional<MaskedLmParams<T>> masked_lm;
  std::optional<Linear<T>> next_sentence;        // BERT NSP [2, H]
  bool causal_lm = false;                        // GPT-2 LM head, tied to the word embeddings
};

template <class T>
struct TransformerParams {
  EmbeddingParams<T> embeddings;
  std::vector<BlockParams<T>> blocks;
  TaskHeadParams<T> task_heads;
};

}  // namespace darkbert
