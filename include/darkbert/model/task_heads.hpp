#pragma once
/// @file
/// Which task heads a model carries on top of its encoder: pooler, sequence classifier (or regressor),
/// masked-LM, next-sentence prediction, causal LM. ("Task heads", to keep them apart from the attention
/// heads inside each block.) Either implied by a Hugging Face architecture name, for building a model
/// without a checkpoint, or detected from the tensors a checkpoint holds.
///
/// @code
/// auto heads = darkbert::TaskHeads::for_architecture(config);   // "BertForSequenceClassification" -> pooler + classifier
/// @endcode

#include <map>     // std::map
#include <string>  // std::string

#include "../core/error.hpp"
#include "../io/checkpoint.hpp"
#include "config.hpp"

namespace darkbert {

/// Which task heads a model has (for Transformer::random and init): `{.classifier_labels = 2}`.
struct TaskHeads {
  bool pooler = false;  ///<  BERT/RoBERTa pooler
  int classifier_labels = 0;  ///< 0 = no classifier; 1 = regression
  bool masked_lm = false;  ///<  masked-LM head
  bool next_sentence = false;  ///<  BERT next-sentence head
  bool causal_lm = false;     ///< GPT-2 LM head (tied to wte, no tensor of its own)

  /// The heads a Hugging Face architecture name implies; a classifier gets config.labels.size() outputs
  /// (2 if the config lists none).
  static TaskHeads for_architecture(const ModelConfig& c) {
    const std::string& a = c.architecture;
    auto ends = [&](const char* suffix) {
      const std::string s = suffix;
      return a.size() >= s.size() && a.compare(a.size() - s.size(), s.size(), s) == 0;
    };
    TaskHeads h;
    const bool bert = c.family == Family::bert;
    if (ends("LMHeadModel")) {  // before "Model", which it also ends with
      if (c.family != Family::gpt2) fail("architecture \"", a, "\": only GPT-2 has a causal-LM head");
      h.causal_lm = true;
    } else if (a.empty() || ends("Model")) {
      h.pooler = bert;
    } else if (ends("ForSequenceClassification")) {
      h.pooler = bert;
      h.classifier_labels = c.labels.empty() ? 2 : static_cast<int>(c.labels.size());
    } else if (ends("ForPreTraining")) {
      if (!bert) fail("architecture \"", a, "\" is not supported (pretraining heads are BERT's)");
      h.pooler = h.masked_lm = h.next_sentence = true;
    } else if (ends("ForMaskedLM")) {
      if (c.family == Family::gpt2) fail("architecture \"", a, "\": GPT-2 has no masked-LM head");
      h.masked_lm = true;
    } else {
      fail("architecture \"", a, "\" is not supported (use *Model, *ForSequenceClassification, *ForPreTraining, "
           "*ForMaskedLM or GPT2LMHeadModel)");
    }
    return h;
  }

  /// The heads a checkpoint carries, from its tensors (canonical name -> name in the file). A GPT-2
  /// checkpoint without a `score` layer gets the tied causal-LM head.
  static TaskHeads detect(const std::map<std::string, std::string>& names, const ModelConfig& c,
                          const CheckpointFolder& ckpt) {
    auto has = [&](const std::string& n) { return names.count(n) != 0; };
    TaskHeads spec;
    spec.pooler = has("pooler.dense.weight");
    std::string classifier;
    switch (c.family) {
      case Family::roberta:
        if (has("classifier.out_proj.weight")) classifier = "classifier.out_proj.weight";
        spec.masked_lm = has("lm_head.dense.weight");
        break;
      case Family::distilbert:
        if (has("classifier.weight")) classifier = "classifier.weight";
        spec.masked_lm = has("vocab_transform.weight");
        break;
      case Family::bert:
        if (has("classifier.weight")) classifier = "classifier.weight";
        spec.masked_lm = has("cls.predictions.transform.dense.weight");
        spec.next_sentence = has("cls.seq_relationship.weight");
        break;
      case Family::gpt2:
        if (has("score.weight")) classifier = "score.weight";
        spec.causal_lm = classifier.empty();
        break;
    }
    const std::string folder = ckpt.directory().string();
    if (!classifier.empty()) {
      const auto& info = ckpt.info(names.at(classifier));
      if (info.shape.size() != 2) fail(folder, ": '", names.at(classifier), "' is not a matrix");
      spec.classifier_labels = static_cast<int>(info.shape[0]);
      if (spec.classifier_labels <= 0) fail(folder, ": '", names.at(classifier), "' has no rows (no labels)");
      if (!c.labels.empty() && static_cast<int>(c.labels.size()) != spec.classifier_labels)
        fail(folder, ": config.json lists ", c.labels.size(), " labels (id2label) but '", names.at(classifier),
             "' has ", spec.classifier_labels, " rows");
    }
    // These heads read the pooler output; without it there is nothing for them to read.
    if (c.family == Family::bert && (spec.classifier_labels > 0 || spec.next_sentence) && !spec.pooler)
      fail(folder, ": a BERT ", spec.next_sentence ? "next-sentence" : "classifier",
           " head needs the pooler, but 'pooler.dense.weight' (or 'bert.pooler.dense.weight') is missing");
    return spec;
  }
};

}  // namespace darkbert
