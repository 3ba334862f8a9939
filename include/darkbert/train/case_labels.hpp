#pragma once
// The training fields of a golden cases file (../shared/golden/README.md): a case's labels as
// TaskLabels, and the files holding its expected loss and gradients.
//
//   for (const auto& c : cases.cases)
//     if (auto grads = darkbert::case_file_field(cases, c, "grads_file")) { ... *grads ... }

#include <cmath>       // std::floor
#include <filesystem>  // std::filesystem::path
#include <optional>    // std::optional
#include <string>      // std::string

#include "../core/error.hpp"
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

}  // namespace darkbert
