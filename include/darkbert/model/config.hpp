#pragma once
/// @file
/// The architecture description of a checkpoint, read from a Hugging Face config.json. One struct covers
/// every family darkbert runs: BERT, RoBERTa, DistilBERT (post-LN encoders) and GPT-2 (pre-LN decoder);
/// the differences between them are fields here, not separate model classes.
///
/// @code
/// auto config = darkbert::ModelConfig::from_json_file("bert-base-uncased/config.json");
/// config.hidden_size;  // 768
/// @endcode

#include <filesystem>  // std::filesystem::path
#include <utility>     // std::pair
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "../io/checkpoint.hpp"  // read_json_file
#include "ops/activation.hpp"  // Activation

namespace darkbert {

/// The model families darkbert runs.
enum class Family { bert, roberta, distilbert, gpt2 };

/// "bert", "roberta", "distilbert" or "gpt2".
inline const char* family_name(Family f) {
  switch (f) {
    case Family::bert: return "bert";
    case Family::roberta: return "roberta";
    case Family::distilbert: return "distilbert";
    case Family::gpt2: return "gpt2";
  }
  return "?";
}

/// Everything about a model's shape and behaviour, read from config.json; the families differ only in these fields.
/// @code
/// auto config = darkbert::ModelConfig::from_json_file("bert-base-uncased/config.json");
/// config.num_layers;   // 12
/// @endcode
struct ModelConfig {
  Family family = Family::bert;  ///<  which family
  std::string architecture;  ///< config "architectures"[0] if present, e.g. "BertForSequenceClassification"
  int vocab_size = 0;  ///<  V
  int hidden_size = 0;  ///<  H
  int num_layers = 0;  ///<  blocks
  int num_heads = 0;  ///<  attention heads per block
  int intermediate_size = 0;  ///<  I, the MLP width
  int max_positions = 0;  ///<  position embeddings
  int type_vocab_size = 0;       ///< 0 = the family has no token types (DistilBERT, GPT-2)
  double layer_norm_eps = 1e-12;  ///<  LayerNorm epsilon
  Activation activation = Activation::gelu_erf;  ///<  the MLP activation (hidden_act)
  bool pre_layer_norm = false;   ///< GPT-2: LN before attention/MLP, final ln_f
  bool causal = false;           ///< GPT-2: query i sees keys j <= i
  bool scale_by_inverse_layer_idx = false;  ///< GPT-2 option: scores also divided by (layer + 1)
  int pad_token_id = 0;          ///< -1 = none
  std::vector<std::string> labels;  ///< id2label in id order (empty = no classification labels in config)
  std::string problem_type;         ///< "regression", "single_label_classification", ... or empty
  /// Dropout probabilities of training (inference never drops): after the embeddings, on attention
  /// probabilities, on the attention and MLP outputs before each residual add, before the classifier.
  double embedding_dropout = 0.1;
  double attention_dropout = 0.1;  ///<  on the attention probabilities
  double hidden_dropout = 0.1;  ///<  on the attention and MLP outputs
  double classifier_dropout = 0.1;  ///< GPT-2's `score` has none (0)

  /// d = H / heads.
  int head_dim() const { return hidden_size / num_heads; }
  /// RoBERTa numbers positions from pad_token_id + 1; everything else from 0.
  int position_offset() const { return family == Family::roberta ? pad_token_id + 1 : 0; }
  /// Longest input the position table admits.
  int max_sequence_length() const { return max_positions - position_offset(); }

  /// A BERT-family shape (erf GELU, post-LN, 2 token types), e.g. for benchmarks and random models:
  /// @code
  /// auto base = ModelConfig::bert_shape(12, 768, 12, 3072);
  /// @endcode
  static ModelConfig bert_shape(int layers, int hidden, int heads, int intermediate, int vocab = 30522,
                                int max_positions = 512) {
    ModelConfig c;
    c.family = Family::bert;
    c.vocab_size = vocab;
    c.hidden_size = hidden;
    c.num_layers = layers;
    c.num_heads = heads;
    c.intermediate_size = intermediate;
    c.max_positions = max_positions;
    c.type_vocab_size = 2;
    return c;
  }

  /// A GPT-2 shape (pre-LN, causal, tanh GELU, LayerNorm eps 1e-5, no token types, no padding token):
  /// @code
  /// auto small = ModelConfig::gpt2_shape(12, 768, 12, 3072);
  /// @endcode
  static ModelConfig gpt2_shape(int layers, int hidden, int heads, int intermediate, int vocab = 50257,
                                int max_positions = 1024) {
    ModelConfig c = bert_shape(layers, hidden, heads, intermediate, vocab, max_positions);
    c.family = Family::gpt2;
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-5;
    c.activation = Activation::gelu_tanh;
    c.pre_layer_norm = true;
    c.causal = true;
    c.pad_token_id = -1;
    c.classifier_dropout = 0;
    return c;
  }

  /// Reads a Hugging Face config.json; errors name `source` and the field.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source = "config.json");
  /// The Hugging Face config.json of this model (what from_json reads back).
  nlohmann::json to_json() const;
  /// Reads a config.json file.
  static ModelConfig from_json_file(const std::filesystem::path& path) {
    return from_json(read_json_file(path), path.string());
  }

  /// Throws naming `source` and the field when a size is not positive or the shapes disagree.
  void validate(const std::string& source) const {
    auto positive = [&](int value, const char* name) {
      if (value <= 0) fail(source, ": ", name, " must be positive, got ", value);
    };
    positive(vocab_size, "vocab_size");
    positive(hidden_size, "hidden size");
    positive(num_layers, "number of layers");
    positive(num_heads, "number of attention heads");
    positive(intermediate_size, "intermediate (FFN) size");
    positive(max_positions, "max_position_embeddings");
    if (hidden_size % num_heads != 0)
      fail(source, ": hidden size ", hidden_size, " is not divisible by the ", num_heads, " attention heads");
    if (!(layer_norm_eps > 0)) fail(source, ": layer norm epsilon must be positive");
    for (const auto& [p, name] : {std::pair{embedding_dropout, "embedding dropout"}, {attention_dropout, "attention dropout"},
                                  {hidden_dropout, "hidden dropout"}, {classifier_dropout, "classifier dropout"}})
      if (!(p >= 0 && p < 1)) fail(source, ": ", name, " probability must lie in [0, 1), got ", p);
    if (max_sequence_length() <= 0)
      fail(source, ": max_position_embeddings ", max_positions, " leaves no room after the position offset");
  }
};

namespace detail {

template <class V>
V json_get(const nlohmann::json& j, const char* key, const std::string& source, V fallback, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) fail(source, ": missing required field \"", key, "\"");
    return fallback;
  }
  try {
    return j[key].get<V>();
  } catch (const nlohmann::json::exception&) {
    fail(source, ": field \"", key, "\" has the wrong type (", j[key].dump(), ")");
  }
}

inline Activation parse_activation(const std::string& name, const std::string& source) {
  if (name == "gelu") return Activation::gelu_erf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::gelu_tanh;
  if (name == "relu") return Activation::relu;
  if (name == "tanh") return Activation::tanh;
  fail(source, ": unsupported activation \"", name, "\" (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, tanh)");
}

}  // namespace detail

inline ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& source) {
  using detail::json_get;
  if (!j.is_object()) fail(source, ": config is not a JSON object");
  ModelConfig c;
  const auto model_type = json_get<std::string>(j, "model_type", source, "", true);
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();

  if (model_type == "bert" || model_type == "roberta" || model_type == "xlm-roberta" || model_type == "camembert") {
    c.family = model_type == "bert" ? Family::bert : Family::roberta;
    c.vocab_size = json_get<int>(j, "vocab_size", source, 0, true);
    c.hidden_size = json_get<int>(j, "hidden_size", source, 768, false);
    c.num_layers = json_get<int>(j, "num_hidden_layers", source, 12, false);
    c.num_heads = json_get<int>(j, "num_attention_heads", source, 12, false);
    c.intermediate_size = json_get<int>(j, "intermediate_size", source, 3072, false);
    c.max_positions = json_get<int>(j, "max_position_embeddings", source, 512, false);
    c.type_vocab_size = json_get<int>(j, "type_vocab_size", source, 2, false);
    c.layer_norm_eps = json_get<double>(j, "layer_norm_eps", source, 1e-12, false);
    c.activation = detail::parse_activation(json_get<std::string>(j, "hidden_act", source, "gelu", false), source);
    c.pad_token_id = json_get<int>(j, "pad_token_id", source, c.family == Family::roberta ? 1 : 0, false);
    c.hidden_dropout = c.embedding_dropout = json_get<double>(j, "hidden_dropout_prob", source, 0.1, false);
    c.attention_dropout = json_get<double>(j, "attention_probs_dropout_prob", source, 0.1, false);
    c.classifier_dropout = json_get<double>(j, "classifier_dropout", source, c.hidden_dropout, false);
    const auto position_type = json_get<std::string>(j, "position_embedding_type", source, "absolute", false);
    if (position_type != "absolute")
      fail(source, ": position_embedding_type \"", position_type, "\" is not supported (only \"absolute\")");
  } else if (model_type == "distilbert") {
    c.family = Family::distilbert;
    c.vocab_size = json_get<int>(j, "vocab_size", source, 0, true);
    c.hidden_size = json_get<int>(j, "dim", source, 768, false);
    c.num_layers = json_get<int>(j, "n_layers", source, 6, false);
    c.num_heads = json_get<int>(j, "n_heads", source, 12, false);
    c.intermediate_size = json_get<int>(j, "hidden_dim", source, 3072, false);
    c.max_positions = json_get<int>(j, "max_position_embeddings", source, 512, false);
    c.layer_norm_eps = 1e-12;  // fixed in DistilBERT's code
    c.activation = detail::parse_activation(json_get<std::string>(j, "activation", source, "gelu", false), source);
    c.pad_token_id = json_get<int>(j, "pad_token_id", source, 0, false);
    c.hidden_dropout = c.embedding_dropout = json_get<double>(j, "dropout", source, 0.1, false);
    c.attention_dropout = json_get<double>(j, "attention_dropout", source, 0.1, false);
    c.classifier_dropout = json_get<double>(j, "seq_classif_dropout", source, 0.2, false);
  } else if (model_type == "gpt2") {
    c.family = Family::gpt2;
    c.vocab_size = json_get<int>(j, "vocab_size", source, 0, true);
    c.hidden_size = json_get<int>(j, "n_embd", source, 768, false);
    c.num_layers = json_get<int>(j, "n_layer", source, 12, false);
    c.num_heads = json_get<int>(j, "n_head", source, 12, false);
    c.intermediate_size = json_get<int>(j, "n_inner", source, 4 * c.hidden_size, false);
    c.max_positions = json_get<int>(j, "n_positions", source, 1024, false);
    c.layer_norm_eps = json_get<double>(j, "layer_norm_epsilon", source, 1e-5, false);
    c.activation =
        detail::parse_activation(json_get<std::string>(j, "activation_function", source, "gelu_new", false), source);
    c.pre_layer_norm = true;
    c.causal = true;
    // GPT-2 has no padding token of its own; a fine-tuning config names one (often eos) for the classifier.
    c.pad_token_id = json_get<int>(j, "pad_token_id", source, -1, false);
    if (!json_get<bool>(j, "scale_attn_weights", source, true, false))
      fail(source, ": scale_attn_weights=false is not supported");
    c.scale_by_inverse_layer_idx = json_get<bool>(j, "scale_attn_by_inverse_layer_idx", source, false, false);
    c.embedding_dropout = json_get<double>(j, "embd_pdrop", source, 0.1, false);
    c.attention_dropout = json_get<double>(j, "attn_pdrop", source, 0.1, false);
    c.hidden_dropout = json_get<double>(j, "resid_pdrop", source, 0.1, false);
    c.classifier_dropout = 0;
  } else {
    fail(source, ": unknown model_type \"", model_type, "\" (supported: bert, roberta, xlm-roberta, camembert, "
         "distilbert, gpt2)");
  }

  if (j.contains("id2label") && j["id2label"].is_object()) {
    const auto& id2label = j["id2label"];
    c.labels.resize(id2label.size());
    for (const auto& [key, value] : id2label.items()) {
      std::size_t id = 0;
      try {
        id = std::stoul(key);
      } catch (const std::exception&) {
        fail(source, ": id2label key \"", key, "\" is not an integer");
      }
      if (id >= c.labels.size()) fail(source, ": id2label ids are not 0..", c.labels.size() - 1);
      c.labels[id] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  } else if (j.contains("num_labels")) {
    const int n = json_get<int>(j, "num_labels", source, 2, false);
    for (int i = 0; i < n; ++i) c.labels.push_back("LABEL_" + std::to_string(i));
  }
  c.problem_type = json_get<std::string>(j, "problem_type", source, "", false);
  c.validate(source);
  return c;
}

inline nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j;
  const char* act = activation == Activation::gelu_erf    ? "gelu"
                    : activation == Activation::gelu_tanh ? "gelu_new"
                    : activation == Activation::relu      ? "relu"
                                                          : "tanh";
  if (!architecture.empty()) j["architectures"] = {architecture};
  j["vocab_size"] = vocab_size;
  switch (family) {
    case Family::bert:
    case Family::roberta:
      j["model_type"] = family == Family::bert ? "bert" : "roberta";
      j["hidden_size"] = hidden_size;
      j["num_hidden_layers"] = num_layers;
      j["num_attention_heads"] = num_heads;
      j["intermediate_size"] = intermediate_size;
      j["max_position_embeddings"] = max_positions;
      j["type_vocab_size"] = type_vocab_size;
      j["layer_norm_eps"] = layer_norm_eps;
      j["hidden_act"] = act;
      j["pad_token_id"] = pad_token_id;
      j["hidden_dropout_prob"] = hidden_dropout;
      j["attention_probs_dropout_prob"] = attention_dropout;
      if (classifier_dropout != hidden_dropout) j["classifier_dropout"] = classifier_dropout;
      break;
    case Family::distilbert:
      j["model_type"] = "distilbert";
      j["dim"] = hidden_size;
      j["n_layers"] = num_layers;
      j["n_heads"] = num_heads;
      j["hidden_dim"] = intermediate_size;
      j["max_position_embeddings"] = max_positions;
      j["activation"] = act;
      j["pad_token_id"] = pad_token_id;
      j["dropout"] = hidden_dropout;
      j["attention_dropout"] = attention_dropout;
      j["seq_classif_dropout"] = classifier_dropout;
      break;
    case Family::gpt2:
      j["model_type"] = "gpt2";
      j["n_embd"] = hidden_size;
      j["n_layer"] = num_layers;
      j["n_head"] = num_heads;
      j["n_inner"] = intermediate_size;
      j["n_positions"] = max_positions;
      j["layer_norm_epsilon"] = layer_norm_eps;
      j["activation_function"] = act;
      j["scale_attn_by_inverse_layer_idx"] = scale_by_inverse_layer_idx;
      if (pad_token_id >= 0) j["pad_token_id"] = pad_token_id;
      j["embd_pdrop"] = embedding_dropout;
      j["attn_pdrop"] = attention_dropout;
      j["resid_pdrop"] = hidden_dropout;
      break;
  }
  if (!labels.empty()) {
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (std::size_t i = 0; i < labels.size(); ++i) {
      id2label[std::to_string(i)] = labels[i];
      label2id[labels[i]] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  if (!problem_type.empty()) j["problem_type"] = problem_type;
  return j;
}

}  // namespace darkbert
