#pragma once
/// @file
/// The parameters of a transformer, one struct per building block. Every family is laid out the same way:
/// nn.Linear weights are stored [out, in] (GPT-2's Conv1D [in, out] is transposed on load), and the three
/// attention projections are fused into one [3H, H] matrix so Q, K and V come out of a single product.

#include <optional>  // std::optional
#include <vector>    // std::vector

#include "../core/matrix.hpp"
#include "../kernels/activation.hpp"  // Activation

namespace darkbert {

/// y = x Wᵀ + b;  weight [out, in], bias [out] (empty for a bias-free layer such as GPT-2's `score`).
template <class T>
struct Linear {
  Matrix<T> weight;  ///<  [out, in]
  Vector<T> bias;  ///<  [out], empty when the layer has none

  Linear() = default;
  /// A zero layer of the given shape.
  Linear(Index in, Index out, bool with_bias = true)
      : weight(Matrix<T>::Zero(out, in)), bias(Vector<T>::Zero(with_bias ? out : 0)) {}
  /// Whether the layer has a bias.
  bool has_bias() const { return bias.size() != 0; }
  /// Input width.
  Index in() const { return weight.cols(); }
  /// Output width.
  Index out() const { return weight.rows(); }
};

/// The gain and shift of a LayerNorm.
template <class T>
struct LayerNormParams {
  Vector<T> weight;  ///< gamma
  Vector<T> bias;    ///< beta

  LayerNormParams() = default;
  /// Identity LayerNorm of width n (gain 1, shift 0).
  explicit LayerNormParams(Index n) : weight(Vector<T>::Ones(n)), bias(Vector<T>::Zero(n)) {}
};

/// Word, position and token-type embeddings and their LayerNorm.
template <class T>
struct EmbeddingParams {
  Matrix<T> word;        ///< [vocab, H]
  Matrix<T> position;    ///< [max_positions, H]
  Matrix<T> token_type;  ///< [type_vocab, H]; 0 rows when the family has no token types
  std::optional<LayerNormParams<T>> norm;  ///< BERT/RoBERTa/DistilBERT; GPT-2 has none
};

/// One transformer block. In a post-LN block (BERT) attn_norm follows attention + residual and mlp_norm
/// follows the MLP + residual; in a pre-LN block (GPT-2: ln_1, ln_2) they precede attention and the MLP.
template <class T>
struct BlockParams {
  Linear<T> qkv;        ///< [3H, H]: rows [0, H) query, [H, 2H) key, [2H, 3H) value
  Linear<T> attn_out;   ///< [H, H]
  LayerNormParams<T> attn_norm;  ///<  LayerNorm after attention (post-LN) or before it (pre-LN)
  Linear<T> mlp_in;     ///< [I, H]
  Linear<T> mlp_out;    ///< [H, I]
  LayerNormParams<T> mlp_norm;  ///<  LayerNorm after the MLP (post-LN) or before it (pre-LN)
};

/// Which row of the final hidden states a sequence classifier reads.
enum class ClassifierInput {
  first_token,  ///< DistilBERT, RoBERTa: h[:, 0]
  pooled,       ///< BERT: the pooler output tanh(W h[:, 0] + b)
  last_token,   ///< GPT-2: h at each row's last non-padding token (found from pad_token_id)
};

/// Sequence classification / regression: out(act(pre(input))).
template <class T>
struct ClassifierParams {
  ClassifierInput input = ClassifierInput::first_token;  ///<  which row the classifier reads
  std::optional<Linear<T>> pre;  ///< DistilBERT pre_classifier (relu), RoBERTa classifier.dense (tanh)
  Activation pre_activation = Activation::none;  ///<  activation after `pre`
  Linear<T> out;                 ///< [labels, H]; GPT-2's `score` has no bias
};

/// Masked-LM head: decoder(norm(act(transform(h)))) + bias, decoder tied to the word embeddings.
template <class T>
struct MaskedLmParams {
  Linear<T> transform;   ///< [H, H]
  LayerNormParams<T> norm;  ///<  LayerNorm after the transform
  Vector<T> decoder_bias;  ///< [vocab]
};

/// The task heads on top of the encoder (as opposed to the attention heads inside it).
template <class T>
struct TaskHeadParams {
  std::optional<LayerNormParams<T>> final_norm;  ///< GPT-2 ln_f
  std::optional<Linear<T>> pooler;               ///< BERT/RoBERTa: tanh(W h[:, 0] + b)
  std::optional<ClassifierParams<T>> classifier;  ///<  sequence classification / regression
  std::optional<MaskedLmParams<T>> masked_lm;  ///<  masked-LM head
  std::optional<Linear<T>> next_sentence;        ///< BERT NSP [2, H]
  bool causal_lm = false;                        ///< GPT-2 LM head, tied to the word embeddings
};

/// Every parameter of a model: embeddings, blocks and task heads.
template <class T>
struct TransformerParams {
  EmbeddingParams<T> embeddings;  ///<  the embedding block
  std::vector<BlockParams<T>> blocks;  ///<  one per layer
  TaskHeadParams<T> task_heads;  ///<  heads on top of the encoder
};

}  // namespace darkbert
