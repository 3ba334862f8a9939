// The (predictions, labels) task-metric adapters give the golden values (scikit-learn / scipy) for every case of
// golden/metrics/*.json and refuse predictions that are not class indices.

#include <doctest/doctest.h>

#include <cmath>    // std::isnan
#include <string>   // std::string
#include <vector>   // std::vector

#include <nlohmann/json.hpp>  // golden files

#include "darkbert/analysis/task_metrics.hpp"
#include "analysis_test_support.hpp"

using namespace darkbert;
using darkbert::test::metrics_golden;

namespace {
void check_metric_value(double got, const nlohmann::json& want) {
  if (want.is_string()) {
    CHECK(std::isnan(got));
  } else {
    CHECK(std::abs(got - want.get<double>()) <= 1e-12);
  }
}
}  // namespace

TEST_CASE("adapters reproduce every golden case") {
  const auto classification = metrics_golden("classification.json")["cases"];
  for (const auto& c : classification) {
    CAPTURE(c["name"].get<std::string>());
    const auto labels = c["y_true"].get<std::vector<double>>();
    const auto predictions = c["y_pred"].get<std::vector<double>>();
    check_metric_value(accuracy_metric(predictions, labels), c["accuracy"]);
    check_metric_value(f1_macro_metric(predictions, labels), c["f1_macro"]);
    check_metric_value(mcc_metric(predictions, labels), c["mcc"]);
    if (c.contains("f1_binary")) check_metric_value(f1_metric(predictions, labels), c["f1_binary"]);
  }
  const auto regression = metrics_golden("regression.json")["cases"];
  for (const auto& c : regression) {
    CAPTURE(c["name"].get<std::string>());
    const auto labels = c["x"].get<std::vector<double>>();
    const auto predictions = c["y"].get<std::vector<double>>();
    check_metric_value(pearson_metric(predictions, labels), c["pearson"]);
    check_metric_value(spearman_metric(predictions, labels), c["spearman"]);
  }
}

TEST_CASE("argument order does not change the scores") {
  // F1 = 2TP / (2TP + FP + FN): swapping truth and prediction swaps FP and FN, so every metric here is symmetric.
  // labels 1 0 0, predictions 1 1 1: TP 1, FP 2, FN 0 -> 2 / 4
  CHECK(f1_metric({1, 1, 1}, {1, 0, 0}) == 0.5);
  CHECK(f1_metric({1, 0, 0}, {1, 1, 1}) == 0.5);
  CHECK(mcc_metric({1, 0, 1, 1}, {1, 0, 0, 1}) == mcc_metric({1, 0, 0, 1}, {1, 0, 1, 1}));
}

TEST_CASE("predictions must be class indices") {
  try {
    accuracy_metric({0, 0.5}, {0, 1});
    FAIL("no error");
  } catch (const darkbert::error& e) {
    CHECK(std::string(e.what()) == "accuracy_metric: prediction[1] = 0.5 is not a class index");
  }
  try {
    mcc_metric({0, 1}, {0, NAN});
    FAIL("no error");
  } catch (const darkbert::error& e) {
    CHECK(std::string(e.what()) == "mcc_metric: label[1] = nan is not a class index");
  }
}
