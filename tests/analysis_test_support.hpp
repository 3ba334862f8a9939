#pragma once
// Shared helpers of the test_analysis_* files: near-equality checks with a tolerance per scalar type, a
// TokenAnnotation builder, and the golden metric files.

#include <doctest/doctest.h>

#include <cmath>        // std::abs
#include <fstream>      // std::ifstream
#include <string>       // std::string
#include <type_traits>  // std::is_same_v
#include <utility>      // std::move

#include <nlohmann/json.hpp>  // golden files

#include "darkbert/analysis/token_annotation.hpp"  // darkbert::TokenAnnotation
#include "test_support.hpp"

namespace darkbert::test {

// CHECKs |got - want| <= the tolerance for T: `float_tolerance` for float results, `double_tolerance` otherwise.
//   check_near<float>(result(0, 1), 0.25);                // 1e-6 / 1e-15
//   check_near<float>(result(0, 1), 0.25, 2e-6, 1e-14);   // a longer sum
template <class T>
void check_near(T got, double want, double float_tolerance = 1e-6, double double_tolerance = 1e-15) {
  const double tol = std::is_same_v<T, float> ? float_tolerance : double_tolerance;
  CHECK_MESSAGE(std::abs(double(got) - want) <= tol, "got " << double(got) << ", want " << want);
}

// A token with the annotations the analyses look at; the rest keep their defaults.
//   const std::vector<TokenAnnotation> s = {tok("[CLS]", true), tok("she", false, "PRON", "nsubj")};
inline TokenAnnotation tok(std::string token, bool special = false, std::string upos = "", std::string deprel = "",
                           bool negation = false) {
  TokenAnnotation a;
  a.token = std::move(token);
  a.is_special = special;
  a.upos = std::move(upos);
  a.deprel = std::move(deprel);
  a.negation = negation;
  return a;
}

// A golden file of golden/metrics/ (scikit-learn / scipy results), parsed.
//   for (const auto& c : metrics_golden("classification.json")["cases"]) ...
inline nlohmann::json metrics_golden(const std::string& file) {
  std::ifstream in(golden_dir() / "metrics" / file);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace darkbert::test
