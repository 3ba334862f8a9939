#pragma once
// The training fields of a golden cases file (../shared/golden/README.md): a case's labels as
// TaskLabels, and the files holding its expected loss and gradients.
//
//   for (const auto& c : cases.cases)
//     if (auto grads = darkbert::case_file_field(cases, c, "grads_file")) { ... *grads ... }

#include <algorithm>   // std::max
#include <cmath>       // std::abs
#include <limits>      // std::numeric_limits
#include <map>         // std::map
#include <filesystem>  // std::filesystem::path
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../io/safetensors.hpp"
#include "../model/case_file.hpp"
#include "task_loss.hpp"

namespace darkbert {

// A path field of a case ("loss_file", "grads_file"), resolved against the golden root; nullopt if absent.
inline std::optional<std::filesystem::path> case_file_field(const CaseFile& file, const Case& c, const char* field) {
  if (!c.raw.contains(field)) return std::nullopt;
  if (!c.raw[field].is_string()) fail(file.path.string(), ": case ", c.name, ": \"", field, "\" is not a path");
  return file.path.parent_path().parent_path() / c.raw[field].get<std::string>();
}

// labels: [B] integers (classes; also read as values), [B] numbers (regression values) or [B][L]
// integers (token targets, -100 = ignored); next_sentence_label: [B].
inline TaskLabels case_labels(const CaseFile& file, const Case& c) {
  TaskLabels labels;
  const std::string where = file.path.string() + ": case " + c.name;
  if (!c.raw.contains("labels")) fail(where, ": no \"labels\"");
  const auto& raw = c.raw["labels"];
  if (!raw.is_array()) fail(where, ": \"labels\" is not an array");
  auto integer = [&](const nlohmann::json& v) {
    if (!v.is_number_integer()) fail(where, ": label ", v.dump(), " is not an integer");
    return v.get<int>();
  };
  for (const auto& v : raw) {
    if (v.is_array()) {
      if (static_cast<Index>(v.size()) != c.batch.length)
        fail(where, ": a row of token labels has ", v.size(), " entries, the batch ", c.batch.length);
      for (const auto& t : v) labels.tokens.push_back(integer(t));
    } else if (v.is_number()) {
      labels.values.push_back(v.get<double>());
      if (v.is_number_integer()) labels.classes.push_back(v.get<int>());
    } else {
      fail(where, ": label ", v.dump(), " is neither a number nor a row of token labels");
    }
  }
  if (labels.classes.size() != labels.values.size()) labels.classes.clear();  // some were not integers
  if (c.raw.contains("next_sentence_label"))
    for (const auto& v : c.raw["next_sentence_label"]) labels.next_sentence.push_back(integer(v));
  return labels;
}

// max |got - expected| / (1 + |expected|) of every tensor of an expected gradient file against computed
// gradients (checkpoint_tensors of a gradient set, F32 or F64): +infinity for a tensor missing from
// `got`, and for a gradient `got` has that the file lacks (under the name "").
template <class T>
std::map<std::string, double> gradient_errors(const std::map<std::string, TensorBytes>& got, const SafetensorsFile& expected) {
  std::map<std::string, double> errors;
  std::vector<double> want;
  for (const auto& info : expected.tensors()) {
    const auto it = got.find(info.name);
    double worst = std::numeric_limits<double>::infinity();
    if (it != got.end() && it->second.bytes.size() == static_cast<std::size_t>(info.numel()) * sizeof(T)) {
      want.resize(static_cast<std::size_t>(info.numel()));
      expected.read_as<double>(info.name, want.data());
      const T* have = reinterpret_cast<const T*>(it->second.bytes.data());
      worst = 0;
      for (std::size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(have[i]) - want[i]) / (1 + std::abs(want[i])));
    }
    errors[info.name] = worst;
  }
  for (const auto& [name, t] : got)
    if (!expected.contains(name)) errors[""] = std::numeric_limits<double>::infinity();
  return errors;
}

}  // namespace darkbert
