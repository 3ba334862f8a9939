// TrainingStep: one slice is the plain training pass bit for bit; a batch cut into slices gives the batch's
// loss and gradients (every golden training case without disabled heads, uneven slices, padded GPT-2 rows
// whose slices predict different numbers of tokens, MLM + NSP); slices give the same bits on one thread
// and on two, with dropout; each slice draws its own dropout; a slice's error and a non-finite loss reach
// the caller before any gradient changes.
#include <doctest/doctest.h>

#include <omp.h>  // omp_set_num_threads, omp_get_max_threads

#include <algorithm>   // std::sort, std::copy_n, std::find_if, std::fill, std::all_of
#include <cmath>       // std::abs, std::isfinite
#include <filesystem>  // std::filesystem::directory_iterator
#include <limits>      // std::numeric_limits
#include <string>      // std::string
#include <vector>      // std::vector

#include <xtensor/xnpy.hpp>

#include "darkbert/train/case_labels.hpp"
#include "darkbert/train/training_step.hpp"
#include "test_support.hpp"

namespace {

using darkbert::test::golden_dir;

// The golden training cases a TrainingStep can run (it takes no masking policies).
std::vector<std::pair<darkbert::CaseFile, std::size_t>> step_cases() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir() / "cases"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<darkbert::CaseFile, std::size_t>> cases;
  for (const auto& path : files) {
    const auto file = darkbert::CaseFile::read(path);
    for (std::size_t k = 0; k < file.cases.size(); ++k)
      if (darkbert::case_file_field(file, file.cases[k], "grads_file") && file.cases[k].disable.empty())
        cases.emplace_back(file, k);
  }
  return cases;
}

template <class T>
void check_slices_against_golden(double tol) {
  int checked = 0;
  for (const auto& [file, k] : step_cases()) {
    const auto& c = file.cases[k];
    const auto model = darkbert::Transformer<T>::load(file.model_dir);
    const auto labels = darkbert::case_labels(file, c);
    const auto expected_loss = xt::load_npy<double>(darkbert::case_file_field(file, c, "loss_file")->string());
    const darkbert::SafetensorsFile expected(*darkbert::case_file_field(file, c, "grads_file"));
    for (const int slices : {1, 2, 3}) {
      const std::string where = file.path.filename().string() + " / " + c.name + ", " + std::to_string(slices) + " slices";
      darkbert::TrainingStep<T> step(model, slices);
      const double loss = step.forward_backward(model, c.batch, labels, {.dropout = false});
      CHECK_MESSAGE(std::abs(loss - expected_loss()) / (1 + std::abs(expected_loss())) <= tol,
                    where << ": loss " << loss << " expected " << expected_loss());
      const auto errors = darkbert::gradient_errors<T>(darkbert::checkpoint_tensors(step.gradients(), model.config()), expected);
      for (const auto& [tensor_name, tensor_error] : errors) {
        const std::string& name = tensor_name;
        const double error = tensor_error;
        CHECK_MESSAGE(error <= tol, where << ": gradient of " << name << " off by " << error);
      }
      ++checked;
    }
  }
  CHECK(checked == 3 * 8);  // the eight golden training cases without disabled heads
}

// The golden GPT-2 LM case with padded rows (lm_loss_padded), its labels and model.
struct LmCase {
  darkbert::CaseFile file = darkbert::CaseFile::read(golden_dir() / "cases" / "gpt2_lm.json");
  const darkbert::Case& c = *std::find_if(file.cases.begin(), file.cases.end(),
                                          [](const darkbert::Case& k) { return k.name == "lm_loss_padded"; });
  darkbert::Transformer<float> model = darkbert::Transformer<float>::load(file.model_dir);
  darkbert::TaskLabels labels = darkbert::case_labels(file, c);
};

std::string gradient_bytes(darkbert::TrainingStep<float>& step, const darkbert::ModelConfig& config) {
  std::string bytes;
  for (const auto& [name, tensor] : darkbert::checkpoint_tensors(step.gradients(), config))
    bytes += name + std::string(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  return bytes;
}

}  // namespace

TEST_CASE("slices of a batch give its loss and gradients: every golden training case, float32 within 1e-4") {
  check_slices_against_golden<float>(1e-4);
}

TEST_CASE("slices of a batch give its loss and gradients: every golden training case, float64 within 1e-9") {
  check_slices_against_golden<double>(1e-9);
}

TEST_CASE("one slice is the plain training pass, bit for bit, with dropout") {
  LmCase lm;
  REQUIRE(lm.model.config().attention_dropout > 0);
  darkbert::TrainingStep<float> step(lm.model);
  const double loss = step.forward_backward(lm.model, lm.c.batch, lm.labels, {.seed = 5, .step = 3});

  darkbert::autodiff::Tape<float> tape;
  auto grads = lm.model.zero_gradients();
  const darkbert::TrainingPass<float> pass{.tape = &tape, .gradients = &grads, .seed = 5, .step = 3};
  darkbert::ForwardResult<float> result;
  darkbert::ForwardOptions<float> options{.training = &pass};
  options.keep_attentions = options.keep_hidden_states = false;
  lm.model.forward_into(lm.c.batch, options, result);
  darkbert::LossTargets<float> targets;
  const auto plain = darkbert::task_loss(tape, lm.model, lm.c.batch, result, lm.labels, targets);
  tape.backward(plain);
  CHECK(loss == static_cast<double>(plain.value()[0]));
  const auto a = darkbert::checkpoint_tensors(step.gradients(), lm.model.config());
  const auto b = darkbert::checkpoint_tensors(grads, lm.model.config());
  REQUIRE(a.size() == b.size());
  for (const auto& [tensor_name, tensor] : a) {
    const std::string& name = tensor_name;
    CHECK_MESSAGE(tensor.bytes == b.at(name).bytes, name);
  }
}

TEST_CASE("slices: the same bits on one thread and on two, with dropout; the thread count is left as it was") {
  LmCase lm;
  const int threads = omp_get_max_threads();
  std::vector<std::string> runs;
  std::vector<double> losses;
  for (const int t : {1, 2, 1}) {
    omp_set_num_threads(t);
    darkbert::TrainingStep<float> step(lm.model, 2);
    losses.push_back(step.forward_backward(lm.model, lm.c.batch, lm.labels, {.seed = 9, .step = 1}));
    CHECK(omp_get_max_threads() == t);
    runs.push_back(gradient_bytes(step, lm.model.config()));
  }
  omp_set_num_threads(threads);
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("each slice draws its own dropout; slice 0 draws the whole batch's") {
  darkbert::TrainingPass<float> pass{.seed = 4, .step = 7};
  CHECK(pass.mask(0.1, 17).key == darkbert::stream_key(4, 7, 17));
  pass.slice = 1;
  CHECK(pass.mask(0.1, 17).key != darkbert::stream_key(4, 7, 17));
  // Two identical rows in two slices: with dropout their gradients differ, without it they agree.
  LmCase lm;
  darkbert::Batch twice = lm.c.batch;
  twice.batch_size = 2;
  twice.input_ids.resize(static_cast<std::size_t>(2 * twice.length));
  twice.attention_mask.resize(twice.input_ids.size());
  std::copy_n(twice.input_ids.begin(), twice.length, twice.input_ids.begin() + twice.length);
  std::copy_n(twice.attention_mask.begin(), twice.length, twice.attention_mask.begin() + twice.length);
  darkbert::TaskLabels labels;
  labels.tokens.assign(lm.labels.tokens.begin(), lm.labels.tokens.begin() + twice.length);
  labels.tokens.insert(labels.tokens.end(), labels.tokens.begin(), labels.tokens.end());
  auto one_row = [&](bool dropout, std::uint64_t slice_seed) {
    // the gradients of the first row alone, as slice 0 (seed) of a one-row batch
    darkbert::Batch row = twice;
    row.batch_size = 1;
    row.input_ids.resize(static_cast<std::size_t>(row.length));
    row.attention_mask.resize(row.input_ids.size());
    darkbert::TaskLabels l;
    l.tokens.assign(labels.tokens.begin(), labels.tokens.begin() + row.length);
    darkbert::TrainingStep<float> step(lm.model);
    step.forward_backward(lm.model, row, l, {.dropout = dropout, .seed = slice_seed});
    return darkbert::checkpoint_tensors(step.gradients(), lm.model.config()).at("transformer.h.0.mlp.c_fc.weight").bytes;
  };
  for (const bool dropout : {false, true}) {
    darkbert::TrainingStep<float> step(lm.model, 2);
    step.forward_backward(lm.model, twice, labels, {.dropout = dropout, .seed = 11});
    // Each slice weighs 1/2: with the same masks in both, their sum is the one-row step's gradient.
    const auto both = darkbert::checkpoint_tensors(step.gradients(), lm.model.config()).at("transformer.h.0.mlp.c_fc.weight").bytes;
    const auto alone = one_row(dropout, 11);
    const auto* g = reinterpret_cast<const float*>(both.data());
    const auto* a = reinterpret_cast<const float*>(alone.data());
    double differs = 0;
    for (std::size_t i = 0; i < alone.size() / sizeof(float); ++i) differs = std::max<double>(differs, std::abs(g[i] - a[i]));
    CAPTURE(dropout);
    if (dropout)
      CHECK(differs > 1e-6);  // slice 1 dropped other units than slice 0
    else
      CHECK(differs < 1e-6);
  }
}

TEST_CASE("a slice's error reaches the caller, naming the batch's row or position") {
  LmCase lm;
  darkbert::Batch bad = lm.c.batch;
  bad.input_ids.back() = 1 << 30;  // in the last slice
  const auto last = std::to_string(bad.batch_size - 1) + "][" + std::to_string(bad.length - 1) + "]";
  const int threads = omp_get_max_threads();
  for (const int t : {1, 2}) {
    omp_set_num_threads(t);
    darkbert::TrainingStep<float> step(lm.model, 2);
    CHECK(darkbert::test::message_of([&] { step.forward_backward(lm.model, bad, lm.labels, {}); }) ==
          "input_ids[" + last + " = 1073741824 is outside the vocabulary [0, " +
              std::to_string(lm.model.config().vocab_size) + ")");
    // Raised inside a slice, on its thread: a causal LM predicts nothing from a row's last position.
    const std::vector<std::pair<darkbert::Index, darkbert::Index>> at_end{{bad.batch_size - 1, bad.length - 1}};
    CHECK(darkbert::test::message_of([&] { step.forward_backward(lm.model, lm.c.batch, lm.labels, {}, at_end); })
              .find("is the last of its row") != std::string::npos);
    const std::vector<std::pair<darkbert::Index, darkbert::Index>> outside{{0, 1}, {bad.batch_size, 0}};
    CHECK(darkbert::test::message_of([&] { step.forward_backward(lm.model, lm.c.batch, lm.labels, {}, outside); }) ==
          "TrainingStep: logit position 1 = (" + std::to_string(bad.batch_size) + ", 0) is outside the batch [" +
              std::to_string(bad.batch_size) + ", " + std::to_string(bad.length) + "]");
    // The step still works afterwards.
    CHECK(std::isfinite(step.forward_backward(lm.model, lm.c.batch, lm.labels, {})));
  }
  // A non-finite loss is refused before any gradient is touched, with one slice or several.
  auto broken = lm.model;
  for (auto& slot : darkbert::parameter_slots(broken.params(), broken.config()))
    if (slot.name == "ln_f.weight") std::fill(slot.data, slot.data + slot.elements(), std::numeric_limits<float>::quiet_NaN());
  for (const int t : {1, 2})
    for (const int slices : {1, 2}) {
      omp_set_num_threads(t);
      darkbert::TrainingStep<float> step(broken, slices);
      CHECK(darkbert::test::message_of([&] { step.forward_backward(broken, lm.c.batch, lm.labels, {.step = 4}); }) ==
            "training: the loss is nan at step 4 (learning rate too high?)");
      for (const auto& [tensor_name, tensor] : darkbert::checkpoint_tensors(step.gradients(), broken.config())) {
        const std::string& name = tensor_name;
        CHECK_MESSAGE(std::all_of(tensor.bytes.begin(), tensor.bytes.end(), [](unsigned char b) { return b == 0; }), name);
      }
    }
  omp_set_num_threads(threads);
  darkbert::TrainingStep<float> step(lm.model, 2);
  darkbert::TaskLabels short_labels = lm.labels;
  short_labels.tokens.pop_back();
  CHECK(darkbert::test::message_of([&] { step.forward_backward(lm.model, lm.c.batch, short_labels, {}); }) ==
        "TrainingStep: " + std::to_string(lm.labels.tokens.size() - 1) + " token labels for a batch of " +
            std::to_string(lm.labels.tokens.size()) + " tokens");
  CHECK(darkbert::test::message_of([&] { darkbert::TrainingStep<float>(lm.model, 0); }) ==
        "TrainingStep: the number of batch slices must be at least 1, got 0");
}
