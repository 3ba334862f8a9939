#pragma once
/// @file
/// Cases files in the "darkbert-golden-cases/1" format (../shared/golden/README.md): a model folder and a
/// list of padded input batches, each with optional disabled heads and the outputs it names.
///
/// @code
/// auto cases = darkbert::CaseFile::read("golden/cases/bert_model.json");
/// auto model = darkbert::Transformer<double>::load(cases.model_dir);
/// for (const auto& c : cases.cases) {
///   auto out = model.forward(c.batch, {.policies = &c.policies<double>()});
///   auto hidden = darkbert::named_output(out, model, "hidden_states");
/// }
/// @endcode

#include <cmath>       // std::abs
#include <filesystem>  // std::filesystem::path
#include <limits>      // std::numeric_limits
#include <map>         // std::map
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include "../core/error.hpp"
#include "../hooks/masking_policy.hpp"
#include "../io/checkpoint.hpp"
#include "batch.hpp"
#include "transformer.hpp"

namespace darkbert {

/// A head a case disables, and how.
struct DisabledHead {
  HeadRef head;  ///<  which head (or layer)
  std::string policy = "uniform";  ///<  the masking policy; the format defines "uniform"
};

/// One case of a cases file: a batch, the heads to disable and the expected outputs.
struct Case {
  std::string name;  ///<  e.g. "single_padded"
  Batch batch;  ///<  the inputs
  std::vector<DisabledHead> disable;  ///<  heads to disable
  std::map<std::string, std::filesystem::path> outputs;  ///< output name -> expected .npy (absolute)
  nlohmann::json raw;                                      ///< the whole case, for fields like labels

  /// The case's disable list as masking policies (only "uniform" is defined by the format).
  template <class T>
  MaskingPolicies<T> policies() const {
    MaskingPolicies<T> p;
    std::vector<HeadRef> heads;
    for (const auto& d : disable) heads.push_back(d.head);
    if (!heads.empty()) p.add(uniform_policy<T>(), heads);
    return p;
  }
};

/// A golden cases file (`darkbert-golden-cases/1`).
/// @code
/// auto cases = darkbert::CaseFile::read("../shared/golden/cases/bert_model.json");
/// auto model = darkbert::Transformer<float>::load(cases.model_dir);
/// @endcode
struct CaseFile {
  std::filesystem::path path;  ///<  the file
  std::filesystem::path model_dir;  ///<  the checkpoint folder it names (absolute)
  std::string family;  ///<  "bert", "roberta", "distilbert" or "gpt2"
  std::string architecture;  ///<  e.g. "BertModel"
  std::vector<Case> cases;  ///<  in file order

  /// Reads and validates a cases file; errors name the file and the case.
  static CaseFile read(const std::filesystem::path& path) {
    const auto json = read_json_file(path);
    const std::string file = path.string();
    if (!json.is_object() || json.value("format", "") != "darkbert-golden-cases/1")
      fail(file, ": not a darkbert-golden-cases/1 file (\"format\" field missing or different)");
    // Relative paths inside the file are relative to the folder above cases/ (the golden root).
    const auto root = path.parent_path().parent_path();
    CaseFile cf;
    cf.path = path;
    cf.model_dir = root / json.at("model").get<std::string>();
    cf.family = json.value("family", "");
    cf.architecture = json.value("architecture", "");
    if (!json.contains("cases") || !json["cases"].is_array()) fail(file, ": no \"cases\" array");
    for (std::size_t k = 0; k < json["cases"].size(); ++k) {
      const auto& c = json["cases"][k];
      const std::string where = file + ": case " + std::to_string(k);
      Case out;
      out.raw = c;
      out.name = c.value("name", "case" + std::to_string(k));
      try {
        const auto ids = c.at("input_ids").get<std::vector<std::vector<int>>>();
        const auto mask = c.contains("attention_mask") ? c["attention_mask"].get<std::vector<std::vector<int>>>()
                                                       : std::vector<std::vector<int>>{};
        const auto types = c.contains("token_type_ids") && !c["token_type_ids"].is_null()
                               ? c["token_type_ids"].get<std::vector<std::vector<int>>>()
                               : std::vector<std::vector<int>>{};
        out.batch.batch_size = static_cast<Index>(ids.size());
        out.batch.length = ids.empty() ? 0 : static_cast<Index>(ids[0].size());
        auto flatten = [&](const std::vector<std::vector<int>>& rows, const char* field) {
          std::vector<int> flat;
          if (rows.size() != ids.size()) fail(where, ": \"", field, "\" has ", rows.size(), " rows, input_ids ", ids.size());
          for (const auto& r : rows) {
            if (static_cast<Index>(r.size()) != out.batch.length) fail(where, ": \"", field, "\" rows differ in length");
            flat.insert(flat.end(), r.begin(), r.end());
          }
          return flat;
        };
        out.batch.input_ids = flatten(ids, "input_ids");
        if (!mask.empty()) out.batch.attention_mask = flatten(mask, "attention_mask");
        if (!types.empty()) out.batch.token_type_ids = flatten(types, "token_type_ids");
        if (c.contains("disable"))
          for (const auto& d : c["disable"]) {
            DisabledHead dh;
            dh.head.layer = d.at("layer").get<int>();
            dh.head.head = d.at("head").is_string() && d["head"] == "all" ? all_heads : d.at("head").get<int>();
            dh.policy = d.value("policy", "uniform");
            if (dh.policy != "uniform") fail(where, ": unknown disable policy \"", dh.policy, "\"");
            out.disable.push_back(dh);
          }
        if (c.contains("outputs"))
          for (const auto& [name, rel] : c["outputs"].items()) out.outputs[name] = root / rel.get<std::string>();
      } catch (const nlohmann::json::exception& e) {
        fail(where, " (", out.name, "): ", e.what());
      }
      cf.cases.push_back(std::move(out));
    }
    return cf;
  }
};

/// max |got - expected| / (1 + |expected|) over all elements, the fixtures' error measure (their
/// tolerance: 1e-4 for float32, tighter for float64); +infinity when the shapes differ.
template <class Got, class Expected>
double max_relative_error(const Got& got, const Expected& expected) {
  if (got.dimension() != expected.dimension()) return std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < got.dimension(); ++k)
    if (got.shape()[k] != expected.shape()[k]) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = static_cast<double>(expected.data()[i]);
    worst = std::max(worst, std::abs(static_cast<double>(got.data()[i]) - e) / (1 + std::abs(e)));
  }
  return worst;
}

/// An output of a forward pass by its cases-file name: embeddings, hidden_states, attentions,
/// last_hidden_state, pooled, logits (sequence or LM logits, whichever the model has), mlm_logits,
/// nsp_logits. Returned as an owning n-d array.
template <class T>
xt::xarray<T> named_output(const ForwardResult<T>& r, const Transformer<T>& model, const std::string& name) {
  auto require_present = [&](bool ok) {
    if (!ok) fail("output '", name, "' was not computed for this model (", model.config().architecture, ")");
  };
  if (name == "embeddings") {
    require_present(r.hidden_states.size() > 0);
    return r.embeddings();
  }
  if (name == "hidden_states") return (require_present(r.hidden_states.size() > 0), r.hidden_states);
  if (name == "attentions") return (require_present(r.attentions.size() > 0), r.attentions);
  if (name == "last_hidden_state") return r.last_hidden_state;
  if (name == "pooled") return (require_present(r.pooled.size() > 0), r.pooled);
  if (name == "nsp_logits") return (require_present(r.next_sentence_logits.size() > 0), r.next_sentence_logits);
  if (name == "mlm_logits") return (require_present(r.token_logits.size() > 0), r.token_logits);
  if (name == "logits") {
    if (r.sequence_logits.size() > 0) return r.sequence_logits;
    return (require_present(r.token_logits.size() > 0), r.token_logits);
  }
  fail("unknown output name '", name, "' (known: embeddings, hidden_states, attentions, last_hidden_state, pooled, "
       "logits, mlm_logits, nsp_logits)");
}

}  // namespace darkbert
