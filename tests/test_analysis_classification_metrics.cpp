// Classification metrics against every case of golden/metrics/classification.json (scikit-learn 1.2), as plain
// functions and as a streaming confusion matrix (one example at a time and merged chunks), plus error messages.

#include <doctest/doctest.h>

#include <string>   // std::string
#include <vector>   // std::vector

#include "darkbert/analysis/classification_metrics.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;
using darkbert::test::metrics_golden;

namespace {
constexpr double kTol = 1e-12;
}  // namespace

TEST_CASE("every golden classification case: plain functions") {
  const auto cases = metrics_golden("classification.json")["cases"];
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    const auto y_true = c["y_true"].get<std::vector<int>>();
    const auto y_pred = c["y_pred"].get<std::vector<int>>();
    CHECK(std::abs(accuracy(y_true, y_pred) - c["accuracy"].get<double>()) <= kTol);
    CHECK(std::abs(f1_macro(y_true, y_pred) - c["f1_macro"].get<double>()) <= kTol);
    CHECK(std::abs(matthews_corrcoef(y_true, y_pred) - c["mcc"].get<double>()) <= kTol);
    if (c.contains("f1_binary")) {
      CHECK(std::abs(f1_binary(y_true, y_pred) - c["f1_binary"].get<double>()) <= kTol);
    } else {
      // Multiclass cases have no binary F1; asking for one is an error, as in scikit-learn.
      CHECK(message_of([&] { f1_binary(y_true, y_pred); }).rfind("f1_binary: label 2 is not 0 or 1", 0) == 0);
    }
    CHECK(std::abs(accuracy<float>(y_true, y_pred) - c["accuracy"].get<double>()) <= 1e-7);
  }
}

TEST_CASE("every golden classification case: streaming confusion matrix equals the whole-set result") {
  const auto cases = metrics_golden("classification.json")["cases"];  // keep the document alive for the loop
  for (const auto& c : cases) {
    const std::string name = c["name"];
    CAPTURE(name);
    const auto y_true = c["y_true"].get<std::vector<int>>();
    const auto y_pred = c["y_pred"].get<std::vector<int>>();
    ConfusionMatrix streaming, first_half, second_half;
    for (std::size_t k = 0; k < y_true.size(); ++k) {
      streaming.add(y_true[k], y_pred[k]);
      (k < y_true.size() / 2 ? first_half : second_half).add(y_true[k], y_pred[k]);
    }
    first_half.merge(second_half);  // labels may be inserted in a different order: counts must still line up
    for (const ConfusionMatrix* cm : {&streaming, &first_half}) {
      CHECK(cm->total() == y_true.size());
      CHECK(cm->accuracy() == accuracy(y_true, y_pred));
      CHECK(cm->f1_macro() == f1_macro(y_true, y_pred));
      CHECK(cm->mcc() == matthews_corrcoef(y_true, y_pred));
      CHECK(std::abs(cm->mcc() - c["mcc"].get<double>()) <= kTol);
      if (c.contains("f1_binary")) CHECK(cm->f1_binary() == f1_binary(y_true, y_pred));
    }
    const auto report = classification_report(streaming, name);
    CHECK(report.examples == y_true.size());
    CHECK(report.col_names[0] == "accuracy");
    CHECK(report(0, 2) == streaming.mcc());
    CHECK(report.cols() == (c.contains("f1_binary") ? 4 : 3));
  }
}

TEST_CASE("confusion matrix counts, label order and memory") {
  ConfusionMatrix cm;
  cm.add(2, 0);
  cm.add(-1, 2);  // labels arrive out of order; storage stays sorted
  cm.add(0, 0);
  cm.add(2, 0);
  CHECK(cm.labels() == std::vector<int>{-1, 0, 2});
  CHECK(cm.count(2, 0) == 2);
  CHECK(cm.count(-1, 2) == 1);
  CHECK(cm.count(0, 0) == 1);
  CHECK(cm.count(0, 2) == 0);
  CHECK(cm.count(7, 7) == 0);
  CHECK(cm.accuracy() == 0.25);
  const auto bytes = cm.memory_bytes();
  for (int k = 0; k < 10000; ++k) cm.add(k % 3 == 0 ? 0 : 2, 0);  // no new labels: no growth
  CHECK(cm.memory_bytes() == bytes);
}

TEST_CASE("hand-checked multiclass F1 and MCC") {
  // y_true 0 0 1 1 2, y_pred 0 1 1 1 0
  //   label 0: tp 1, fp 1, fn 1 -> F1 .5;  label 1: tp 2, fp 1, fn 0 -> p 2/3, r 1 -> F1 .8;  label 2: 0
  //   macro = (.5 + .8 + 0) / 3 = 13/30
  //   MCC: t_sum (2, 2, 1), p_sum (2, 3, 0), correct 3, n 5: cov_ytyp = 15 - (4 + 6) = 5,
  //        cov_ypyp = 25 - (4 + 9) = 12, cov_ytyt = 25 - (4 + 4 + 1) = 16 -> 5 / sqrt(192)
  const std::vector<int> t = {0, 0, 1, 1, 2}, p = {0, 1, 1, 1, 0};
  CHECK(std::abs(f1_macro(t, p) - 13.0 / 30) <= 1e-15);
  CHECK(std::abs(matthews_corrcoef(t, p) - 5 / std::sqrt(192.0)) <= 1e-15);
}

TEST_CASE("classification errors") {
  const std::vector<int> a = {0, 1}, b = {0};
  CHECK(message_of([&] { accuracy(a, b); }) == "accuracy: 2 true labels but 1 predictions");
  CHECK(message_of([&] { f1_macro(a, b); }) == "f1_macro: 2 true labels but 1 predictions");
  CHECK(message_of([&] { matthews_corrcoef(std::vector<int>{}, std::vector<int>{}); }) ==
        "matthews_corrcoef: no examples (empty input)");
  CHECK(message_of([&] { accuracy(std::vector<int>{}, std::vector<int>{}); }) == "accuracy: no examples (empty input)");
  ConfusionMatrix empty;
  CHECK(message_of([&] { empty.mcc(); }) == "mcc: no examples (empty input)");
  CHECK(message_of([&] { empty.add(a, b); }) == "confusion matrix: 2 true labels but 1 predictions");
  CHECK(message_of([&] { f1_binary(std::vector<int>{0, 3}, std::vector<int>{0, 0}); }) ==
        "f1_binary: label 3 is not 0 or 1 (binary F1 needs labels in {0, 1}; use f1_macro for other label sets)");
}
