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

#include <cmath>       // std::abs, std::isfinite
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
#include "../io/json.hpp"
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

  /// Reads and checks a cases file; every error names the file, the case and the field.
  static CaseFile read(const std::filesystem::path& path) {
    const auto json = read_json_file(path);  // strict: duplicate keys and deep nesting are refused
    const std::string file = path.string();
    try {
      return from_json(json, path);
    } catch (const nlohmann::json::exception& e) {  // a field of the wrong type that a check below missed
      fail(file, ": ", e.what());
    }
  }

 private:
  static std::string string_field(const nlohmann::json& j, const char* key, const std::string& where,
                                  const std::string& fallback, bool required = false) {
    if (!j.contains(key)) {
      if (required) fail(where, ": missing \"", key, "\"");
      return fallback;
    }
    if (!j[key].is_string()) fail(where, ": \"", key, "\" must be a string, got ", j[key].dump());
    return j[key].get<std::string>();
  }

  // [[int]] with every value a true integer in int range: 63.9 or 2^32 + 63 is an error, not 63.
  static std::vector<std::vector<int>> int_rows(const nlohmann::json& j, const std::string& where) {
    if (!j.is_array()) fail(where, " must be an array of rows, got ", j.type_name());
    std::vector<std::vector<int>> rows;
    for (std::size_t r = 0; r < j.size(); ++r) {
      if (!j[r].is_array()) fail(where, "[", r, "] must be an array of integers, got ", j[r].type_name());
      std::vector<int> row;
      for (std::size_t i = 0; i < j[r].size(); ++i)
        row.push_back(json_integer<int>(j[r][i], where + "[" + std::to_string(r) + "][" + std::to_string(i) + "]"));
      rows.push_back(std::move(row));
    }
    return rows;
  }

  static CaseFile from_json(const nlohmann::json& json, const std::filesystem::path& path) {
    const std::string file = path.string();
    if (!json.is_object() || !json.contains("format") || json["format"] != "darkbert-golden-cases/1")
      fail(file, ": not a darkbert-golden-cases/1 file (\"format\" field missing or different)");
    // Relative paths inside the file are relative to the folder above cases/ (the golden root).
    const auto root = path.parent_path().parent_path();
    CaseFile cf;
    cf.path = path;
    cf.model_dir = root / string_field(json, "model", file, "", true);
    cf.family = string_field(json, "family", file, "");
    cf.architecture = string_field(json, "architecture", file, "");
    if (!json.contains("cases") || !json["cases"].is_array()) fail(file, ": no \"cases\" array");
    std::map<std::filesystem::path, std::string> written;  // output file name -> "case/output" using it
    for (std::size_t k = 0; k < json["cases"].size(); ++k) {
      const auto& c = json["cases"][k];
      std::string where = file + ": case " + std::to_string(k);
      if (!c.is_object()) fail(where, ": not an object");
      Case out;
      out.raw = c;
      out.name = string_field(c, "name", where, "case" + std::to_string(k));
      where += " (" + out.name + ")";
      if (!c.contains("input_ids")) fail(where, ": missing \"input_ids\"");
      const auto ids = int_rows(c["input_ids"], where + ": input_ids");
      const auto mask = c.contains("attention_mask") ? int_rows(c["attention_mask"], where + ": attention_mask")
                                                     : std::vector<std::vector<int>>{};
      const auto types = c.contains("token_type_ids") && !c["token_type_ids"].is_null()
                             ? int_rows(c["token_type_ids"], where + ": token_type_ids")
                             : std::vector<std::vector<int>>{};
      out.batch.batch_size = static_cast<Index>(ids.size());
      out.batch.length = ids.empty() ? 0 : static_cast<Index>(ids[0].size());
      auto flatten = [&](const std::vector<std::vector<int>>& rows, const char* field) {
        std::vector<int> flat;
        if (rows.size() != ids.size()) fail(where, ": \"", field, "\" has ", rows.size(), " rows, input_ids ", ids.size());
        for (std::size_t r = 0; r < rows.size(); ++r) {
          if (static_cast<Index>(rows[r].size()) != out.batch.length)
            fail(where, ": \"", field, "\" row ", r, " has ", rows[r].size(), " entries, row 0 of input_ids ",
                 out.batch.length, " (rows must be padded to one length)");
          flat.insert(flat.end(), rows[r].begin(), rows[r].end());
        }
        return flat;
      };
      out.batch.input_ids = flatten(ids, "input_ids");
      if (!mask.empty()) out.batch.attention_mask = flatten(mask, "attention_mask");
      if (!types.empty()) out.batch.token_type_ids = flatten(types, "token_type_ids");
      if (c.contains("disable")) {
        if (!c["disable"].is_array()) fail(where, ": \"disable\" must be an array");
        for (std::size_t d = 0; d < c["disable"].size(); ++d) {
          const auto& entry = c["disable"][d];
          const std::string at = where + ": disable[" + std::to_string(d) + "]";
          if (!entry.is_object() || !entry.contains("layer") || !entry.contains("head"))
            fail(at, " must be {\"layer\": int, \"head\": int or \"all\"}");
          DisabledHead dh;
          dh.head.layer = json_integer<int>(entry["layer"], at + ".layer");
          dh.head.head = entry["head"] == "all" ? all_heads : json_integer<int>(entry["head"], at + ".head");
          dh.policy = string_field(entry, "policy", at, "uniform");
          if (dh.policy != "uniform") fail(at, ": unknown disable policy \"", dh.policy, "\"");
          out.disable.push_back(dh);
        }
      }
      if (c.contains("outputs")) {
        if (!c["outputs"].is_object()) fail(where, ": \"outputs\" must be an object {name: file}");
        for (const auto& [name, rel] : c["outputs"].items()) {
          if (!rel.is_string()) fail(where, ": output '", name, "' must name a file, got ", rel.dump());
          const std::filesystem::path expected = root / rel.get<std::string>();
          // A runner writes each output flat under this base name, so it must be a plain, unique file name.
          const auto base = expected.filename();
          if (base.empty() || base == "." || base == "..")
            fail(where, ": output '", name, "' file \"", rel.get<std::string>(), "\" has no file name");
          const auto [it, fresh] = written.emplace(base, out.name + "/" + name);
          if (!fresh)
            fail(where, ": output '", name, "' has the same file name ", base.string(), " as ", it->second,
                 " (outputs are written flat under their base names)");
          out.outputs[name] = expected;
        }
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

namespace detail {

/// The checkpoint tensor of a family's masked-LM head (what TaskHeads::detect looks for).
inline const char* masked_lm_tensor(Family f) {
  switch (f) {
    case Family::roberta: return "lm_head.dense.weight";
    case Family::distilbert: return "vocab_transform.weight";
    case Family::gpt2: return "lm_head (GPT-2 has no masked-LM head)";
    case Family::bert: break;
  }
  return "cls.predictions.transform.dense.weight";
}

}  // namespace detail

/// Refuses, before any forward pass, a cases file that names an output this model cannot produce, naming
/// the case, the output and the tensor the checkpoint lacks; a runner calls it before writing anything, so
/// a missing pooler does not surface after other outputs were already written.
///   darkbert::require_outputs(cases, model, model_dir);
template <class T>
void require_outputs(const CaseFile& file, const Transformer<T>& model, const std::filesystem::path& model_dir) {
  const TaskHeads heads = model.task_heads();
  const Family family = model.config().family;
  const bool lm = heads.masked_lm || heads.causal_lm;
  for (const auto& c : file.cases)
    for (const auto& [name, expected] : c.outputs) {
      const char* missing = nullptr;
      if (name == "embeddings" || name == "hidden_states" || name == "attentions" || name == "last_hidden_state") {
        continue;  // every model computes these
      } else if (name == "pooled") {
        if (!heads.pooler) missing = "pooler.dense.weight";
      } else if (name == "nsp_logits") {
        if (!heads.next_sentence) missing = "cls.seq_relationship.weight";
      } else if (name == "mlm_logits") {
        if (!lm) missing = detail::masked_lm_tensor(family);
      } else if (name == "logits") {
        if (!lm && heads.classifier_labels == 0)
          missing = family == Family::gpt2 ? "score.weight" : "classifier.weight (or a masked-LM head)";
      } else {
        fail(file.path.string(), ": case '", c.name, "': unknown output name '", name,
             "' (known: embeddings, hidden_states, attentions, last_hidden_state, pooled, logits, mlm_logits, "
             "nsp_logits)");
      }
      if (missing)
        fail(file.path.string(), ": case '", c.name, "' asks for output '", name, "', which needs the tensor '",
             missing, "', and the checkpoint ", model_dir.string(), " has none");
    }
}

/// Refuses an output holding NaN or infinity, naming the case, the output and the element: finite weights
/// can still overflow the computation type (a weight near FLT_MAX), and a runner must not write such an
/// output and exit 0.
///   darkbert::require_finite_output(value, "forward", "hidden_states");
template <class E>
void require_finite_output(const E& value, const std::string& case_name, const std::string& output) {
  for (std::size_t i = 0; i < value.size(); ++i)
    if (!std::isfinite(static_cast<double>(value.data()[i])))
      fail("case '", case_name, "': output '", output, "' holds the non-finite value ", value.data()[i],
           " at flat index ", i, " (the weights overflow the computation type)");
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
