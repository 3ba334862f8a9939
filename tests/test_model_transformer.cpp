// The forward pass against every golden case of every model folder, in float and in double.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::directory_iterator
#include <random>      // std::mt19937_64, std::uniform_int_distribution
#include <string>      // std::string
#include <vector>      // std::vector

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
  return darkbert::max_relative_error(got, expected) / tol;
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
  REQUIRE(files.size() >= 16);  // the README lists 16 model folders, one cases file each
  std::size_t cases_run = 0, outputs_checked = 0;
  for (const auto& path : files) {
    const auto cases = darkbert::CaseFile::read(path);
    const auto model = darkbert::Transformer<T>::load(cases.model_dir);
    for (const auto& c : cases.cases) {
      const auto policies = c.template policies<T>();
      const auto result = model.forward(c.batch, {.policies = &policies});
      REQUIRE_MESSAGE(!c.outputs.empty(), path.filename().string() << " / " << c.name << " names no outputs");
      for (const auto& [output, file] : c.outputs) {
        const std::string& name = output;
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
  CHECK(cases_run == 60);  // every case of the fixtures (README: 56, plus the 4 GPT-2 sequence-classification cases)
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

TEST_CASE("the same input gives bit-identical output on every run, also into a reused result") {
  for (const char* name : {"bert_model.json", "gpt2_lm.json", "bert_pretraining.json"}) {
    const auto cases = darkbert::CaseFile::read(golden_dir() / "cases" / name);
    const auto model = darkbert::Transformer<float>::load(cases.model_dir);
    darkbert::ForwardResult<float> reused;
    for (const auto& c : cases.cases) {
      const auto policies = c.policies<float>();
      const auto fresh = model.forward(c.batch, {.policies = &policies});
      model.forward_into(c.batch, {.policies = &policies}, reused);
      CHECK(fresh.attentions == reused.attentions);
      CHECK(fresh.hidden_states == reused.hidden_states);
      CHECK(fresh.token_logits == reused.token_logits);
      CHECK(model.forward(c.batch, {.policies = &policies}).attentions == fresh.attentions);
    }
    // Outputs a later call does not compute are emptied, not left stale.
    darkbert::ForwardOptions<float> lean;
    lean.keep_attentions = false;
    lean.compute_heads = false;
    model.forward_into(cases.cases.front().batch, lean, reused);
    CHECK(reused.attentions.size() == 0);
    CHECK(reused.token_logits.size() == 0);
    CHECK(reused.pooled.size() == 0);
    CHECK(reused.last_hidden_state == model.forward(cases.cases.front().batch).last_hidden_state);
  }
}

TEST_CASE("a lean forward (no maps, no hidden states kept) gives the full forward's bits, at every length") {
  // Without kept maps each layer's map sits in one scratch buffer, not at its layer's offset in
  // `attentions`: the same arithmetic must give the same bits at either address. Lengths: tiny maps (Eigen
  // would take the coefficient-wise product), the fixtures' own, and rows longer than any vector.
  for (const char* name : {"bert_model", "gpt2_lm", "roberta_model", "distilbert_seqcls"}) {
    CAPTURE(name);
    const auto model = darkbert::Transformer<float>::load(golden_dir() / "models" / name);
    std::mt19937_64 rng(17);
    std::uniform_int_distribution<int> token(5, model.config().vocab_size - 1);
    for (darkbert::Index L : {3, 11, 37}) {
      CAPTURE(L);
      std::vector<std::vector<int>> rows = {std::vector<int>(static_cast<std::size_t>(L)),
                                            std::vector<int>(static_cast<std::size_t>(L - L / 3))};  // one padded
      for (auto& row : rows)
        for (auto& id : row) id = token(rng);
      const auto batch = darkbert::Batch::from_rows(rows, 1);
      const auto full = model.forward(batch);
      for (bool keep_hidden : {true, false}) {
        darkbert::ForwardOptions<float> lean;
        lean.keep_attentions = false;
        lean.keep_hidden_states = keep_hidden;
        lean.compute_heads = false;
        CHECK(model.forward(batch, lean).last_hidden_state == full.last_hidden_state);
      }
      darkbert::ForwardOptions<float> no_maps;  // the heads too
      no_maps.keep_attentions = false;
      const auto heads = model.forward(batch, no_maps);
      CHECK(heads.token_logits == full.token_logits);
      CHECK(heads.sequence_logits == full.sequence_logits);
    }
  }
}

TEST_CASE_TEMPLATE("prefix caching: starting at layer l from hidden_states[l] reproduces the full run", T, float,
                   double) {
  // (The ablation sweep relies on it, with lean runs: no maps, no hidden states kept.)
  for (const char* name : {"bert_seqcls3.json", "gpt2_lm.json"}) {
    const auto cases = darkbert::CaseFile::read(golden_dir() / "cases" / name);
    const auto model = darkbert::Transformer<T>::load(cases.model_dir);
    const auto& batch = cases.cases.front().batch;
    const auto full = model.forward(batch);
    // hidden_states[l] is the stream entering block l; for GPT-2 the last entry is after ln_f, not a stream.
    const int last = model.config().pre_layer_norm ? model.config().num_layers - 1 : model.config().num_layers;
    for (int l = 0; l <= last; ++l) {
      const auto prefix = xt::xarray<T>(xt::view(full.hidden_states, l));
      const auto resumed = model.forward(batch, {.start_layer = l, .start_hidden = prefix.data()});
      CHECK(resumed.last_hidden_state == full.last_hidden_state);
      CHECK(resumed.sequence_logits == full.sequence_logits);
      CHECK(resumed.token_logits == full.token_logits);
      const auto lean = model.forward(batch, {.keep_hidden_states = false, .keep_attentions = false, .start_layer = l,
                                              .start_hidden = prefix.data()});
      CHECK(lean.last_hidden_state == full.last_hidden_state);
      CHECK(lean.sequence_logits == full.sequence_logits);
      CHECK(lean.token_logits == full.token_logits);
    }
  }
}
