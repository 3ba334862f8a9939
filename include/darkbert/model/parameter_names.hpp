#pragma once
/// @file
/// Where each parameter lives in a Hugging Face checkpoint. `parameter_slots` lists, for every family,
/// the checkpoint name (without the base-model prefix), the shape stored there, and the memory it fills.
/// Loading reads through these slots; training will write gradients back through the same slots, under
/// the checkpoint's own names.

#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "config.hpp"
#include "parameters.hpp"

namespace darkbert {

/// One parameter tensor as the checkpoint names it, and where its values live in the model.
template <class T>
struct ParameterSlot {
  std::string name;                 ///< canonical name, e.g. "encoder.layer.0.attention.self.query.weight"
  std::vector<std::int64_t> shape;  ///< shape in the checkpoint
  T* data = nullptr;                ///< destination, row-major
  bool transposed = false;          ///< the checkpoint stores the transpose (GPT-2 Conv1D [in, out])
  bool encoder = false;             ///< part of the base model (embeddings, blocks, GPT-2 ln_f), not a task head

  /// Number of elements (the product of the shape).
  Index elements() const {
    Index n = 1;
    for (auto d : shape) n *= static_cast<Index>(d);
    return n;
  }
};

/// The base-model prefix a task checkpoint puts before the encoder names ("bert.embeddings...").
inline std::string base_prefix(Family family) {
  switch (family) {
    case Family::bert: return "bert.";
    case Family::roberta: return "roberta.";
    case Family::distilbert: return "distilbert.";
    case Family::gpt2: return "transformer.";
  }
  return "";
}

namespace detail {

template <class T>
struct SlotList {
  std::vector<ParameterSlot<T>> slots;

  void matrix(const std::string& name, Matrix<T>& m, bool transposed = false) {
    std::vector<std::int64_t> shape = {m.rows(), m.cols()};
    if (transposed) std::swap(shape[0], shape[1]);
    slots.push_back({name, shape, m.data(), transposed});
  }
  void vector(const std::string& name, Vector<T>& v) { slots.push_back({name, {v.size()}, v.data(), false}); }
  /// A [rows, cols] block of a fused matrix starting at row `first_row` (the fused Q/K/V rows).
  void rows(const std::string& name, Matrix<T>& m, Index first_row, Index count) {
    slots.push_back({name, {count, m.cols()}, m.data() + first_row * m.cols(), false});
  }
  void segment(const std::string& name, Vector<T>& v, Index first, Index count) {
    slots.push_back({name, {count}, v.data() + first, false});
  }
  void linear(const std::string& name, Linear<T>& l, bool transposed = false) {
    matrix(name + ".weight", l.weight, transposed);
    vector(name + ".bias", l.bias);
  }
  void norm(const std::string& name, LayerNormParams<T>& n) {
    vector(name + ".weight", n.weight);
    vector(name + ".bias", n.bias);
  }
};

}  // namespace detail

/// Every parameter slot of `params` for the given family, in checkpoint naming.
template <class T>
std::vector<ParameterSlot<T>> parameter_slots(TransformerParams<T>& params, const ModelConfig& config) {
  detail::SlotList<T> s;
  const Index H = config.hidden_size;
  auto& e = params.embeddings;
  auto& heads = params.task_heads;
  const auto layer_name = [](const char* stem, std::size_t i) { return std::string(stem) + std::to_string(i) + "."; };

  // Everything listed before the task heads belongs to the encoder.
  const auto mark_encoder = [&] {
    for (auto& slot : s.slots) slot.encoder = true;
  };
  if (config.family == Family::gpt2) {
    s.matrix("wte.weight", e.word);
    s.matrix("wpe.weight", e.position);
    for (std::size_t i = 0; i < params.blocks.size(); ++i) {
      auto& b = params.blocks[i];
      const auto p = layer_name("h.", i);
      s.norm(p + "ln_1", b.attn_norm);
      s.linear(p + "attn.c_attn", b.qkv, true);
      s.linear(p + "attn.c_proj", b.attn_out, true);
      s.norm(p + "ln_2", b.mlp_norm);
      s.linear(p + "mlp.c_fc", b.mlp_in, true);
      s.linear(p + "mlp.c_proj", b.mlp_out, true);
    }
    s.norm("ln_f", *heads.final_norm);
    mark_encoder();
    if (auto& c = heads.classifier) s.matrix("score.weight", c->out.weight);  // GPT2ForSequenceClassification
    return s.slots;
  }

  const bool distil = config.family == Family::distilbert;
  s.matrix("embeddings.word_embeddings.weight", e.word);
  s.matrix("embeddings.position_embeddings.weight", e.position);
  if (!distil) s.matrix("embeddings.token_type_embeddings.weight", e.token_type);
  s.norm("embeddings.LayerNorm", *e.norm);
  for (std::size_t i = 0; i < params.blocks.size(); ++i) {
    auto& b = params.blocks[i];
    if (distil) {
      const auto p = layer_name("transformer.layer.", i);
      const char* qkv_names[3] = {"attention.q_lin", "attention.k_lin", "attention.v_lin"};
      for (int k = 0; k < 3; ++k) {
        s.rows(p + qkv_names[k] + ".weight", b.qkv.weight, k * H, H);
        s.segment(p + qkv_names[k] + ".bias", b.qkv.bias, k * H, H);
      }
      s.linear(p + "attention.out_lin", b.attn_out);
      s.norm(p + "sa_layer_norm", b.attn_norm);
      s.linear(p + "ffn.lin1", b.mlp_in);
      s.linear(p + "ffn.lin2", b.mlp_out);
      s.norm(p + "output_layer_norm", b.mlp_norm);
    } else {
      const auto p = layer_name("encoder.layer.", i);
      const char* qkv_names[3] = {"attention.self.query", "attention.self.key", "attention.self.value"};
      for (int k = 0; k < 3; ++k) {
        s.rows(p + qkv_names[k] + ".weight", b.qkv.weight, k * H, H);
        s.segment(p + qkv_names[k] + ".bias", b.qkv.bias, k * H, H);
      }
      s.linear(p + "attention.output.dense", b.attn_out);
      s.norm(p + "attention.output.LayerNorm", b.attn_norm);
      s.linear(p + "intermediate.dense", b.mlp_in);
      s.linear(p + "output.dense", b.mlp_out);
      s.norm(p + "output.LayerNorm", b.mlp_norm);
    }
  }

  mark_encoder();
  if (heads.pooler) s.linear("pooler.dense", *heads.pooler);
  if (auto& c = heads.classifier) {
    if (distil) {
      s.linear("pre_classifier", *c->pre);
      s.linear("classifier", c->out);
    } else if (config.family == Family::roberta) {
      s.linear("classifier.dense", *c->pre);
      s.linear("classifier.out_proj", c->out);
    } else {
      s.linear("classifier", c->out);
    }
  }
  if (auto& m = heads.masked_lm) {
    if (distil) {
      s.linear("vocab_transform", m->transform);
      s.norm("vocab_layer_norm", m->norm);
      s.vector("vocab_projector.bias", m->decoder_bias);
    } else if (config.family == Family::roberta) {
      s.linear("lm_head.dense", m->transform);
      s.norm("lm_head.layer_norm", m->norm);
      s.vector("lm_head.bias", m->decoder_bias);
    } else {
      s.linear("cls.predictions.transform.dense", m->transform);
      s.norm("cls.predictions.transform.LayerNorm", m->norm);
      s.vector("cls.predictions.bias", m->decoder_bias);
    }
  }
  if (heads.next_sentence) s.linear("cls.seq_relationship", *heads.next_sentence);
  return s.slots;
}

/// Checkpoint entries that are not parameters (buffers) or are copies of tied weights; a loader skips them.
inline bool is_ignored_tensor(const std::string& name, Family family) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (name == "embeddings.position_ids" || name == "embeddings.token_type_ids") return true;
  if (family == Family::gpt2 && (ends_with(".attn.bias") || ends_with(".attn.masked_bias"))) return true;
  // Tied decoders (present in some files, always equal to the word embeddings / the decoder bias).
  return name == "cls.predictions.decoder.weight" || name == "cls.predictions.decoder.bias" ||
         name == "lm_head.weight" || name == "lm_head.decoder.weight" || name == "lm_head.decoder.bias" ||
         name == "vocab_projector.weight";
}

}  // namespace darkbert
