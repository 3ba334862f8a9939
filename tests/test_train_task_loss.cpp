// Training against the golden fixtures: for every case of every cases file that has a loss_file and a
// grads_file (BERT classification and regression, BertForPreTraining MLM + NSP, DistilBERT, GPT-2 LM with
// padding, GPT-2 classification and regression, with and without disabled heads), the loss and the
// gradient of every parameter, under the checkpoint's own names, in float32 and float64.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::directory_iterator
#include <string>      // std::string
#include <vector>      // std::vector

#include <xtensor/xnpy.hpp>

#include "darkbert/train/case_labels.hpp"
#include "test_support.hpp"

namespace {

using darkbert::test::golden_dir;

template <class T>
void check_every_gradient_case(double tol) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir() / "cases"))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  int cases_checked = 0, tensors_checked = 0;
  for (const auto& path : files) {
    const auto file = darkbert::CaseFile::read(path);
    for (const auto& c : file.cases) {
      const auto grads_file = darkbert::case_file_field(file, c, "grads_file");
      const auto loss_file = darkbert::case_file_field(file, c, "loss_file");
      if (!grads_file) continue;
      REQUIRE(loss_file);
      const std::string where = path.filename().string() + " / " + c.name;
      const auto model = darkbert::Transformer<T>::load(file.model_dir);
      const auto labels = darkbert::case_labels(file, c);
      darkbert::autodiff::Tape<T> tape;
      auto grads = model.zero_gradients();
      const darkbert::TrainingPass<T> pass{.tape = &tape, .gradients = &grads, .dropout = false};
      const auto policies = c.template policies<T>();
      darkbert::ForwardResult<T> result;
      model.forward_into(c.batch, {.policies = &policies, .training = &pass}, result);
      darkbert::LossTargets<T> targets;
      const auto loss = darkbert::task_loss(tape, model, c.batch, result, labels, targets);
      const auto expected_loss = xt::load_npy<double>(loss_file->string());
      const double loss_error = std::abs(loss.value()[0] - expected_loss()) / (1 + std::abs(expected_loss()));
      CHECK_MESSAGE(loss_error <= tol, where << ": loss " << loss.value()[0] << " expected " << expected_loss());
      tape.backward(loss);

      const auto got = darkbert::checkpoint_tensors(grads, model.config());
      const auto errors = darkbert::gradient_errors<T>(got, darkbert::SafetensorsFile(*grads_file));
      CHECK_MESSAGE(errors.size() == got.size(), where << ": gradient names differ from the checkpoint's");
      for (const auto& [tensor_name, tensor_error] : errors) {
        const std::string& name = tensor_name;
        const double error = tensor_error;
        CHECK_MESSAGE(error <= tol, where << ": gradient of " << name << " off by " << error << " (tolerance " << tol << ")");
        ++tensors_checked;
      }
      ++cases_checked;
    }
  }
  MESSAGE(cases_checked << " gradient cases, " << tensors_checked << " parameter gradients checked");
  CHECK(cases_checked == 15);  // every case with a grads_file in ../shared/golden/cases
}

}  // namespace

TEST_CASE("every golden loss and parameter gradient, float32 within 1e-4 (1 + |expected|)") {
  check_every_gradient_case<float>(1e-4);
}

TEST_CASE("every golden loss and parameter gradient, float64 within 1e-9 (1 + |expected|)") {
  check_every_gradient_case<double>(1e-9);
}
