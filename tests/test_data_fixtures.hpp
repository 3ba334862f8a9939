#pragma once
// Shared fixtures of the test_data_* files: a small annotator trained once per test process on the first
// 2000 sentences of UD English EWT train (4 iterations, two-pass tagger with 2 jackknife folds; ~3 s).
// The reported accuracies come from the full training (darkbert annotate), not from this model.

#include <vector>  // std::vector

#include "darkbert/data/annotator.hpp"
#include "darkbert/data/conllu.hpp"
#include "test_support.hpp"

namespace darkbert::test {

inline const std::vector<ConlluSentence>& ewt_dev() {
  static const auto dev = read_conllu(data_dir() / "ud" / "en_ewt-ud-dev.conllu");
  return dev;
}

inline const std::vector<ConlluSentence>& ewt_train_head() {
  static const auto head = [] {
    auto train = read_conllu(data_dir() / "ud" / "en_ewt-ud-train.conllu");
    train.resize(2000);
    return train;
  }();
  return head;
}

inline AnnotatorTrainOptions small_annotator_options() {
  AnnotatorTrainOptions o;
  o.tagger.iterations = 4;
  o.tagger.folds = 2;
  o.labeller.iterations = 4;
  return o;
}

inline const Annotator& small_annotator() {
  static const Annotator a = Annotator::train(ewt_train_head(), small_annotator_options(), "ewt-train[:2000]");
  return a;
}

}  // namespace darkbert::test
