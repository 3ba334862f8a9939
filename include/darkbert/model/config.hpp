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

#include <cmath>       // std::isfinite
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem::path
#include <utility>     // std::pair
#include <string>      // std::string
#include <type_traits> // std::is_same_v
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "../io/checkpoint.hpp"  // CheckpointFolder
#include "../io/json.hpp"        // read_json_file, json_integer
#include "../kernels/activation.hpp"    // Activation

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
  /// Reads a config.json file (strict JSON, io/json.hpp); errors name the file and the field.
  static ModelConfig from_json_file(const std::filesystem::path& path) {
    return from_json(read_json_file(path), path.string());
  }

  /// Sizes a config.json may ask for. They are far above every released model of these families (the
  /// largest vocabularies are ~250k, the deepest stacks 48 layers) and exist so that a corrupt or hostile
  /// file is refused by name before anything is allocated, instead of allocating until bad_alloc.
  /// @{
  /// Largest value accepted for vocab_size, hidden_size, num_layers, intermediate_size,
  /// max_position_embeddings, type_vocab_size and the number of labels.
  static constexpr int max_vocab_size = 1 << 24;
  static constexpr int max_hidden_size = 1 << 16;
  static constexpr int max_layers = 1 << 12;
  static constexpr int max_intermediate_size = 1 << 20;
  static constexpr int max_position_count = 1 << 20;
  static constexpr int max_type_vocab_size = 1 << 16;
  static constexpr int max_labels = 1 << 20;
  /// @}
  static constexpr std::uint64_t max_parameters = 1ull << 35;  ///< 34 billion: 137 GB of float32

  /// Parameters of the base model (embeddings, blocks, their LayerNorms); task heads add more, and load()
  /// checks the exact shapes. Computed without overflow for any config within the per-field limits above.
  std::uint64_t parameter_count() const {
    const std::uint64_t H = static_cast<std::uint64_t>(hidden_size), I = static_cast<std::uint64_t>(intermediate_size);
    const std::uint64_t per_layer = 4 * H * H + 2 * H * I + 9 * H + I;  // qkv, out, two FFN, biases, 2 LNs
    const std::uint64_t embeddings = (static_cast<std::uint64_t>(vocab_size) + static_cast<std::uint64_t>(max_positions) +
                                      static_cast<std::uint64_t>(type_vocab_size) + 2) * H;
    return embeddings + static_cast<std::uint64_t>(num_layers) * per_layer;
  }

  /// Throws naming `source` and the field when a size is not positive, exceeds its limit, or the shapes
  /// disagree.
  void validate(const std::string& source) const {
    auto in_range = [&](int value, int most, const char* name) {
      if (value <= 0) fail(source, ": ", name, " must be positive, got ", value);
      if (value > most) fail(source, ": ", name, " ", value, " exceeds darkbert's limit of ", most, " (corrupt config?)");
    };
    in_range(vocab_size, max_vocab_size, "vocab_size");
    in_range(hidden_size, max_hidden_size, "hidden size");
    in_range(num_layers, max_layers, "number of layers");
    in_range(num_heads, max_hidden_size, "number of attention heads");
    in_range(intermediate_size, max_intermediate_size, "intermediate (FFN) size");
    in_range(max_positions, max_position_count, "max_position_embeddings");
    if (type_vocab_size < 0 || type_vocab_size > max_type_vocab_size)
      fail(source, ": type_vocab_size ", type_vocab_size, " outside [0, ", max_type_vocab_size, "]");
    if (labels.size() > static_cast<std::size_t>(max_labels))
      fail(source, ": ", labels.size(), " labels exceed darkbert's limit of ", max_labels);
    if (hidden_size % num_heads != 0)
      fail(source, ": hidden size ", hidden_size, " is not divisible by the ", num_heads, " attention heads");
    if (!(layer_norm_eps > 0) || !std::isfinite(layer_norm_eps))
      fail(source, ": layer norm epsilon must be positive and finite, got ", layer_norm_eps);
    // RoBERTa numbers positions from pad_token_id: padding takes row pad_token_id of the position table.
    if (family == Family::roberta && (pad_token_id < 0 || pad_token_id >= max_positions))
      fail(source, ": RoBERTa's pad_token_id ", pad_token_id, " must index the position table [0, ", max_positions, ")");
    if (pad_token_id < -1) fail(source, ": pad_token_id ", pad_token_id, " is negative (use null for none)");
    for (const auto& [p, name] : {std::pair{embedding_dropout, "embedding dropout"}, {attention_dropout, "attention dropout"},
                                  {hidden_dropout, "hidden dropout"}, {classifier_dropout, "classifier dropout"}})
      if (!(p >= 0 && p < 1)) fail(source, ": ", name, " probability must lie in [0, 1), got ", p);
    if (max_sequence_length() <= 0)
      fail(source, ": max_position_embeddings ", max_positions, " leaves no room after the position offset");
    if (parameter_count() > max_parameters)
      fail(source, ": the config describes ", parameter_count(), " parameters, more than darkbert's limit of ",
           max_parameters, " (corrupt config?)");
  }

  /// Refuses, before anything is allocated, a config that asks for more parameters than the checkpoint
  /// folder stores values: every parameter must be read from the folder (tied decoders add no
  /// parameters), so such a pair can only fail later, after allocating what the config asks for.
  void require_fits(const CheckpointFolder& checkpoint, const std::string& source) const {
    const std::uint64_t stored = checkpoint.stored_elements();
    if (parameter_count() > stored)
      fail(source, ": the config describes ", parameter_count(), " parameters (", family_name(family), ", ", num_layers,
           " layers, hidden ", hidden_size, ", intermediate ", intermediate_size, ", vocab ", vocab_size, ") but ",
           checkpoint.directory().string(), " stores only ", stored, " values; config.json does not match the weights");
  }
};

namespace detail {

// A config field of type V (int, double, bool or std::string), strictly: no bool -> int, 2.9 -> 2 or
// 2^32 + 2 -> 2 coercions (json_integer); null or absent gives the fallback unless required.
template <class V>
V json_get(const nlohmann::json& j, const char* key, const std::string& source, V fallback, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) fail(source, ": missing required field \"", key, "\"");
    return fallback;
  }
  const auto& v = j[key];
  const std::string where = source + ": field \"" + key + "\"";
  if constexpr (std::is_same_v<V, int>) {
    return json_integer<int>(v, where);
  } else if constexpr (std::is_same_v<V, double>) {
    if (!v.is_number()) fail(where, " must be a number, got ", v.dump());
    return v.get<double>();
  } else if constexpr (std::is_same_v<V, bool>) {
    if (!v.is_boolean()) fail(where, " must be true or false, got ", v.dump());
    return v.get<bool>();
  } else {
    if (!v.is_string()) fail(where, " must be a string, got ", v.dump());
    return v.get<std::string>();
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
    c.intermediate_size = json_get<int>(j, "n_inner", source,
                                          c.hidden_size <= ModelConfig::max_hidden_size ? 4 * c.hidden_size : 0, false);
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
    if (id2label.size() > static_cast<std::size_t>(ModelConfig::max_labels))
      fail(source, ": id2label has ", id2label.size(), " labels, more than darkbert's limit of ", ModelConfig::max_labels);
    c.labels.resize(id2label.size());
    std::vector<bool> seen(id2label.size(), false);
    for (const auto& [key, value] : id2label.items()) {
      // Strictly a decimal integer: stoul would also take " 1", "+1" and "1x".
      std::size_t id = 0;
      bool ok = !key.empty() && key.size() <= 9 && (key == "0" || key[0] != '0');
      for (char ch : key) ok = ok && ch >= '0' && ch <= '9';
      if (ok) id = std::stoul(key);
      if (!ok) fail(source, ": id2label key \"", key, "\" is not a label id");
      if (id >= c.labels.size()) fail(source, ": id2label ids are not 0..", c.labels.size() - 1, " (has ", id, ")");
      if (seen[id]) fail(source, ": id2label gives id ", id, " twice");
      seen[id] = true;
      c.labels[id] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  } else if (j.contains("num_labels")) {
    const int n = json_get<int>(j, "num_labels", source, 2, false);
    if (n < 0 || n > ModelConfig::max_labels)
      fail(source, ": num_labels ", n, " outside [0, ", ModelConfig::max_labels, "]");
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
