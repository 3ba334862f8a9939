#pragma once
// Building a Transformer: loading a Hugging Face checkpoint folder, saving one, and seeded random
// initialisation. Included at the end of transformer.hpp (the member functions it defines are declared
// there); not meant to be included on its own.

#include <filesystem>  // std::filesystem::path
#include <map>         // std::map
#include <random>      // std::mt19937_64, std::normal_distribution
#include <set>         // std::set
#include <string>      // std::string
#include <vector>      // std::vector

#include "../../core/atomic_file.hpp"  // write_file_atomically
#include "../../io/checkpoint.hpp"
#include "../../io/safetensors.hpp"
#include "../parameter_names.hpp"
#include "../task_heads.hpp"

namespace darkbert {

// ------------------------------------------------------------------------------------------ building

namespace detail {

// Allocates parameters of the right shapes for a config and a set of heads.
template <class T>
TransformerParams<T> allocate_params(const ModelConfig& c, const TaskHeads& spec) {
  const Index H = c.hidden_size, I = c.intermediate_size;
  TransformerParams<T> p;
  p.embeddings.word = Matrix<T>::Zero(c.vocab_size, H);
  p.embeddings.position = Matrix<T>::Zero(c.max_positions, H);
  p.embeddings.token_type = Matrix<T>::Zero(c.type_vocab_size, H);
  if (c.family != Family::gpt2) p.embeddings.norm = LayerNormParams<T>(H);
  for (int l = 0; l < c.num_layers; ++l) {
    BlockParams<T> b;
    b.qkv = Linear<T>(H, 3 * H);
    b.attn_out = Linear<T>(H, H);
    b.attn_norm = LayerNormParams<T>(H);
    b.mlp_in = Linear<T>(H, I);
    b.mlp_out = Linear<T>(I, H);
    b.mlp_norm = LayerNormParams<T>(H);
    p.blocks.push_back(std::move(b));
  }
  auto& heads = p.task_heads;
  if (c.family == Family::gpt2) heads.final_norm = LayerNormParams<T>(H);
  heads.causal_lm = spec.causal_lm;
  if (spec.pooler) heads.pooler = Linear<T>(H, H);
  if (spec.classifier_labels > 0) {
    ClassifierParams<T> cls;
    cls.out = Linear<T>(H, spec.classifier_labels, /*with_bias=*/c.family != Family::gpt2);
    switch (c.family) {
      case Family::distilbert:
        cls.pre = Linear<T>(H, H);
        cls.pre_activation = Activation::relu;
        break;
      case Family::roberta:
        cls.pre = Linear<T>(H, H);
        cls.pre_activation = Activation::tanh;
        break;
      case Family::bert: cls.input = ClassifierInput::pooled; break;
      case Family::gpt2: cls.input = ClassifierInput::last_token; break;
    }
    heads.classifier = std::move(cls);
  }
  if (spec.masked_lm) heads.masked_lm = MaskedLmParams<T>{Linear<T>(H, H), LayerNormParams<T>(H), Vector<T>::Zero(c.vocab_size)};
  if (spec.next_sentence) heads.next_sentence = Linear<T>(H, 2);
  return p;
}

// Maps checkpoint names to canonical ones: strips the base-model prefix, renames legacy LayerNorm
// gamma/beta, drops buffers and tied copies. Two names landing on one canonical name is an error.
inline std::map<std::string, std::string> canonical_names(const CheckpointFolder& ckpt, Family family) {
  const std::string prefix = base_prefix(family);
  std::map<std::string, std::string> canonical;  // canonical -> name in the file
  for (const auto& name : ckpt.tensor_names()) {
    std::string c = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
    auto ends_with = [&](const std::string& s) { return c.size() >= s.size() && c.compare(c.size() - s.size(), s.size(), s) == 0; };
    if (ends_with(".gamma")) c = c.substr(0, c.size() - 6) + ".weight";
    else if (ends_with(".beta")) c = c.substr(0, c.size() - 5) + ".bias";
    if (is_ignored_tensor(c, family)) continue;
    const auto [it, inserted] = canonical.emplace(c, name);
    if (!inserted)
      fail(ckpt.directory().string(), ": tensors '", it->second, "' and '", name, "' both provide '", c, "'");
  }
  return canonical;
}

}  // namespace detail

template <class T>
Transformer<T> Transformer<T>::load(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  if (!std::filesystem::exists(config_path)) fail(dir.string(), ": no config.json");
  ModelConfig config = ModelConfig::from_json_file(config_path);
  CheckpointFolder ckpt(dir);
  // Before allocating: a config asking for more parameters than the folder stores cannot load.
  config.require_fits(ckpt, config_path.string());
  const auto names = detail::canonical_names(ckpt, config.family);
  const TaskHeads spec = TaskHeads::detect(names, config, ckpt);
  if (spec.classifier_labels > 0 && config.labels.empty())
    for (int i = 0; i < spec.classifier_labels; ++i) config.labels.push_back("LABEL_" + std::to_string(i));

  Transformer model(config, detail::allocate_params<T>(config, spec));
  std::set<std::string> used;
  std::vector<T> staging;
  for (const auto& slot : parameter_slots(model.params_, config)) {
    const auto it = names.find(slot.name);
    if (it == names.end())
      fail(dir.string(), ": missing tensor '", slot.name, "' (also looked for '", base_prefix(config.family),
           slot.name, "'", slot.name.find("LayerNorm.weight") != std::string::npos ? " and the legacy '.gamma'" : "",
           ")");
    const TensorInfo& info = ckpt.info(it->second);
    if (info.shape != slot.shape)
      fail(ckpt.file_of(it->second).path().string(), ": tensor '", it->second, "' has shape ",
           shape_string(info.shape), " but config.json (", family_name(config.family), ", hidden ",
           config.hidden_size, ", ", config.num_heads, " heads, intermediate ", config.intermediate_size,
           ", vocab ", config.vocab_size, ") requires ", shape_string(slot.shape));
    if (!slot.transposed) {
      ckpt.read_as<T>(it->second, slot.data);
    } else {
      // Conv1D [in, out] -> our [out, in].
      const Index rows = slot.shape[0], cols = slot.shape[1];
      staging.resize(static_cast<std::size_t>(rows * cols));
      ckpt.read_as<T>(it->second, staging.data());
      MatrixMap<T>(slot.data, cols, rows) = ConstMatrixMap<T>(staging.data(), rows, cols).transpose();
    }
    used.insert(slot.name);
  }
  for (const auto& [canonical, actual] : names)
    if (!used.count(canonical)) model.unused_.push_back(actual);
  return model;
}

// Every tensor of a parameter set under its checkpoint name, in checkpoint layout (GPT-2 Conv1D weights
// transposed back to [in, out]): what save() writes, and how gradients are written (same names, same
// shapes, so they line up with the checkpoint tensor by tensor).
template <class T>
std::map<std::string, TensorBytes> checkpoint_tensors(const TransformerParams<T>& params_in, const ModelConfig& config) {
  const auto& h = params_in.task_heads;
  const bool task_model = h.classifier || h.masked_lm || h.next_sentence || config.family == Family::gpt2;
  const std::string prefix = task_model ? base_prefix(config.family) : "";
  auto& params = const_cast<TransformerParams<T>&>(params_in);  // slots are read only here
  std::map<std::string, TensorBytes> tensors;
  std::vector<T> staging;
  for (const auto& slot : parameter_slots(params, config)) {
    const Index n = slot.elements();
    const T* source = slot.data;
    if (slot.transposed) {  // back to Conv1D [in, out]
      staging.resize(static_cast<std::size_t>(n));
      MatrixMap<T>(staging.data(), slot.shape[0], slot.shape[1]) =
          ConstMatrixMap<T>(slot.data, slot.shape[1], slot.shape[0]).transpose();
      source = staging.data();
    }
    const bool head = slot.name.rfind("cls.", 0) == 0 || slot.name.rfind("classifier", 0) == 0 ||
                      slot.name.rfind("pre_classifier", 0) == 0 || slot.name.rfind("lm_head", 0) == 0 ||
                      slot.name.rfind("vocab_", 0) == 0 || slot.name == "score.weight";
    tensors[(head ? "" : prefix) + slot.name] = tensor_bytes(source, slot.shape);
  }
  return tensors;
}

template <class T>
void Transformer<T>::save(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "model.safetensors", checkpoint_tensors(params_, config_));
  write_file_atomically(dir / "config.json", config_.to_json().dump(2) + "\n");
}

template <class T>
TaskHeads Transformer<T>::task_heads() const {
  const auto& h = params_.task_heads;
  TaskHeads spec;
  spec.pooler = h.pooler.has_value();
  spec.classifier_labels = h.classifier ? static_cast<int>(h.classifier->out.out()) : 0;
  spec.masked_lm = h.masked_lm.has_value();
  spec.next_sentence = h.next_sentence.has_value();
  spec.causal_lm = h.causal_lm;
  return spec;
}

template <class T>
TransformerParams<T> Transformer<T>::zero_gradients() const {
  TransformerParams<T> g = detail::allocate_params<T>(config_, task_heads());
  for (const auto& slot : parameter_slots(g, config_)) {
    const Index n = slot.elements();
    std::fill(slot.data, slot.data + n, T(0));
  }
  return g;
}

template <class T>
Transformer<T> Transformer<T>::random(const ModelConfig& config, const TaskHeads& heads, std::uint64_t seed) {
  config.validate("random model config");
  Transformer model(config, detail::allocate_params<T>(config, heads));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, random_init_std);
  for (const auto& slot : parameter_slots(model.params_, config)) {
    const bool is_norm_weight = slot.name.find("LayerNorm.weight") != std::string::npos ||
                                slot.name.find("layer_norm.weight") != std::string::npos ||
                                slot.name.find("ln_") != std::string::npos;
    const Index n = slot.elements();
    if (is_norm_weight && slot.name.size() > 7 && slot.name.compare(slot.name.size() - 7, 7, ".weight") == 0) {
      std::fill(slot.data, slot.data + n, T(1));
    } else if (slot.shape.size() == 1 && slot.name.find("bias") != std::string::npos) {
      std::fill(slot.data, slot.data + n, T(0));
    } else {
      for (Index i = 0; i < n; ++i) slot.data[i] = static_cast<T>(normal(rng));
    }
  }
  return model;
}


template <class T>
Transformer<T> Transformer<T>::with_task_heads(const ModelConfig& config, const TaskHeads& heads,
                                               std::uint64_t seed) const {
  const auto& a = config_;
  const auto& b = config;
  if (a.family != b.family || a.vocab_size != b.vocab_size || a.hidden_size != b.hidden_size ||
      a.num_layers != b.num_layers || a.num_heads != b.num_heads || a.intermediate_size != b.intermediate_size ||
      a.max_positions != b.max_positions || a.type_vocab_size != b.type_vocab_size)
    fail("with_task_heads: the new config does not have this model's encoder shape (family, vocabulary, "
         "hidden size, layers, heads, FFN size, positions and token types must agree)");
  Transformer out = random(config, heads, seed);
  std::map<std::string, ParameterSlot<T>> mine;
  for (auto& slot : parameter_slots(const_cast<TransformerParams<T>&>(params_), config_)) mine.emplace(slot.name, slot);
  for (const auto& slot : parameter_slots(out.params_, out.config_)) {
    const auto it = mine.find(slot.name);
    if (it == mine.end() || it->second.shape != slot.shape) continue;
    const Index n = slot.elements();
    std::copy(it->second.data, it->second.data + n, slot.data);
  }
  return out;
}


}  // namespace darkbert
