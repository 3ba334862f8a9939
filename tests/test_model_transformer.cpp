// The forward pass against every golden case of every model folder, in float and in double.
#include <doctest/doctest.h>

#include <cmath>       // std::abs
#include <filesystem>  // std::filesystem::directory_iterator
#include <string>      // std::string

#include <xtensor/xnpy.hpp>

#include "darkbert/model/case_file.hpp"
#include "test_support.hpp"

namespace {

using darkbert::test::golden_dir;

// Largest violation of |got - exp| <= tol * (1 + |exp|), as a ratio (<= 1 passes).
template <class T>
double worst_ratio(const xt::xarray<T>& got, const xt::xarray<double>& expected, double tol) {
  REQUIRE(got.shape().size() == expected.shape().size());
  for (std::size_t i = 0; i < got.shape().size(); ++i) REQUIRE(got.shape()[i] == expected.shape()[i]);
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = expected.data()[i];
    const double g = static_cast<double>(got.data()[i]);
    worst = std::max(worst, std::abs(g - e) / (tol * (1 + std::abs(e))));
  }
  return worst;
}

std::vector<std::filesystem::path> case_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir() / "cases"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

template <class T>
void check_all_cases(double tol) {
  const auto files = case_files();
  REQUIRE(files.size() >= 14);  // the README lists 14 model folders, one cases file each
  std::size_t cases_run = 0, outputs_checked = 0;
  for (const auto& path : files) {
    const auto cases = darkbert::CaseFile::read(path);
    const auto model = darkbert::Transformer<T>::load(cases.model_dir);
    for (const auto& c : cases.cases) {
      const auto policies = c.template policies<T>();
      const auto result = model.forward(c.batch, {.policies = &policies});
      REQUIRE_MESSAGE(!c.outputs.empty(), path.filename().string() << " / " << c.name << " names no outputs");
      for (const auto& [name, file] : c.outputs) {
        const auto expected = xt::load_npy<double>(file.string());
        const auto got = darkbert::named_output(result, model, name);
        const double ratio = worst_ratio<T>(got, expected, tol);
        CHECK_MESSAGE(ratio <= 1.0, path.filename().string() << " / " << c.name << " / " << name
                                                             << ": worst error " << ratio << " x tolerance " << tol);
        ++outputs_checked;
      }
      ++cases_run;
    }
  }
  MESSAGE(cases_run << " cases, " << outputs_checked << " outputs checked");
  CHECK(cases_run == 56);  // every case of the fixtures (README: 56)
}

}  // namespace

TEST_CASE("every golden case matches in float32 within 1e-4 (1 + |expected|)") { check_all_cases<float>(1e-4); }

TEST_CASE("every golden case matches in float64 within 1e-12 (1 + |expected|)") { check_all_cases<double>(1e-12); }

TEST_CASE("disabling nothing is bit-identical to no policy at all") {
  const auto cases = darkbert::CaseFile::read(golden_dir() / "cases" / "bert_model.json");
  const auto model = darkbert::Transformer<float>::load(cases.model_dir);
  const darkbert::MaskingPolicies<float> none;
  const auto& batch = cases.cases.front().batch;
  const auto a = model.forward(batch);
  const auto b = model.forward(batch, {.policies = &none});
  CHECK(a.attentions == b.attentions);
  CHECK(a.hidden_states == b.hidden_states);
}
