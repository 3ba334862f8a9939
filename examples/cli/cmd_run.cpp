// darkbert run --cases FILE --out DIR [--model DIR] [--disable L:H,...] [--dtype float32|float64]
//              [--check | --against DIR]
//
// Runs every case of a cases file (../shared/golden format) and writes each output the case names as .npy
// under that file's base name in --out. A labelled case (loss_file, grads_file) is also trained through
// one step without dropout: its loss is written as a 0-d .npy and the gradient of every parameter as
// safetensors under the checkpoint's own names, each under the expected file's base name. With --check,
// compares everything with the expected files and fails if anything differs by more than the fixture
// tolerance. With --against DIR, compares the forward outputs instead with those an earlier run wrote
// into DIR (same --dtype), within the same tolerance: e.g. the BLAS path (DARKBERT_KERNEL=blas) against
// the tile kernel.

#include <CLI/CLI.hpp>

#include <limits>      // std::numeric_limits
#include <filesystem>  // std::filesystem
#include <iostream>    // std::cout
#include <string>      // std::string
#include <vector>      // std::vector

#include "commands.hpp"
#include "darkbert/io/npy.hpp"
#include "darkbert/model/case_file.hpp"
#include "darkbert/train/case_labels.hpp"

namespace darkbert::cli {

// Parses "3:7,5:all" (also "5:*") into head references.
inline std::vector<HeadRef> parse_head_list(const std::string& text) {
  std::vector<HeadRef> heads;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const auto colon = item.find(':');
    if (colon == std::string::npos) fail("--disable: \"", item, "\" is not LAYER:HEAD (e.g. 3:7 or 5:all)");
    HeadRef ref;
    try {
      std::size_t used = 0;
      ref.layer = std::stoi(item.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument(item);
      const std::string head = item.substr(colon + 1);
      if (head == "all" || head == "*") {
        ref.head = all_heads;
      } else {
        ref.head = std::stoi(head, &used);
        if (used != head.size()) throw std::invalid_argument(item);
      }
    } catch (const std::logic_error&) {
      fail("--disable: \"", item, "\" is not LAYER:HEAD (e.g. 3:7 or 5:all)");
    }
    heads.push_back(ref);
    start = end + 1;
  }
  return heads;
}

struct RunOptions {
  std::filesystem::path cases, out, model, against;
  std::string disable;
  std::string dtype = "float32";
  bool check = false;
};

// One step of a labelled case: writes <case>.loss.npy and <case>.grads.safetensors; returns the number of
// checks that failed.
template <class T>
int run_training_case(const Transformer<T>& model, const CaseFile& file, const Case& c,
                      const MaskingPolicies<T>& policies, const RunOptions& o, double tol) {
  const auto loss_file = case_file_field(file, c, "loss_file");
  const auto grads_file = case_file_field(file, c, "grads_file");
  if (!loss_file && !grads_file) return 0;
  const auto labels = case_labels(file, c);
  autodiff::Tape<T> tape;
  auto grads = model.zero_gradients();
  const TrainingPass<T> pass{.tape = &tape, .gradients = &grads, .dropout = false};
  ForwardResult<T> result;
  model.forward_into(c.batch, {.policies = &policies, .training = &pass}, result);
  LossTargets<T> targets;
  const auto loss = task_loss(tape, model, c.batch, result, labels, targets);
  tape.backward(loss);
  int failures = 0;
  if (loss_file) {
    xt::xarray<T> value = xt::xarray<T>::from_shape({});
    value() = loss.value()[0];
    require_finite_output(value, c.name, "loss");
    write_npy(o.out / loss_file->filename(), value);
    if (o.check) {
      const auto expected_array = read_npy<double>(*loss_file);
      if (expected_array.size() != 1)
        fail(loss_file->string(), ": expected a single loss value, the file holds ", expected_array.size());
      const double expected = expected_array.data()[0];
      const double error = std::abs(loss.value()[0] - expected) / (1 + std::abs(expected));
      failures += !(error <= tol);
      std::cout << (error <= tol ? "ok   " : "FAIL ") << c.name << " loss " << loss.value()[0] << " max|diff|/(1+|exp|) = " << error << "\n";
    }
  }
  if (grads_file) {
    const auto tensors = checkpoint_tensors(grads, model.config());
    write_safetensors(o.out / grads_file->filename(), tensors);
    if (o.check) {
      double worst = 0;
      for (const auto& [name, error] : gradient_errors<T>(tensors, SafetensorsFile(*grads_file))) {
        worst = std::max(worst, error);
        if (!(error <= tol))
          std::cout << "FAIL " << c.name << " gradient of " << (name.empty() ? "a tensor the file lacks" : name)
                    << " max|diff|/(1+|exp|) = " << error << "\n";
      }
      const bool ok = worst <= tol;
      failures += !ok;
      std::cout << (ok ? "ok   " : "FAIL ") << c.name << " gradients of " << tensors.size()
                << " parameters max|diff|/(1+|exp|) = " << worst << "\n";
    }
  }
  return failures;
}

template <class T>
int run_cases(const RunOptions& o) {
  const auto file = CaseFile::read(o.cases);
  const auto model_dir = o.model.empty() ? file.model_dir : o.model;
  const auto model = Transformer<T>::load(model_dir);
  const auto extra = parse_head_list(o.disable);
  require_outputs(file, model, model_dir);  // before anything is written
  std::filesystem::create_directories(o.out);
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-9;
  const bool compare = o.check || !o.against.empty();
  int failures = 0;
  for (const auto& c : file.cases) {
    auto policies = c.template policies<T>();
    if (!extra.empty()) policies.add(uniform_policy<T>(), extra);
    const auto result = model.forward(c.batch, {.policies = &policies});
    for (const auto& [name, expected_path] : c.outputs) {
      const auto out_path = o.out / expected_path.filename();
      const auto value = named_output(result, model, name);
      require_finite_output(value, c.name, name);
      write_npy(out_path, value);
      if (!compare) continue;
      const auto expected = read_npy<double>(o.against.empty() ? expected_path : o.against / expected_path.filename());
      const double worst = max_relative_error(value, expected);
      const bool same_shape = worst != std::numeric_limits<double>::infinity();
      const bool ok = same_shape && worst <= tol;
      failures += !ok;
      std::cout << (ok ? "ok   " : "FAIL ") << c.name << " " << name << " max|diff|/(1+|exp|) = " << worst
                << (same_shape ? "" : " (shape differs)") << "\n";
    }
    failures += run_training_case(model, file, c, policies, o, tol);
  }
  std::cout << file.cases.size() << " cases from " << o.cases.string() << " -> " << o.out.string()
            << (compare ? (failures ? " — " + std::to_string(failures) + " outputs out of tolerance" : " — all outputs within tolerance") : "")
            << "\n";
  return failures ? 1 : 0;
}

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run every case of a cases file and write the outputs as .npy");
  cmd->footer("Example: darkbert run --cases ../shared/golden/cases/bert_model.json --out out/bert_model --check\n"
              "         DARKBERT_KERNEL=blas darkbert run --cases ... --out out/blas --against out/bert_model");
  cmd->add_option("--cases", opts->cases, "Cases file (darkbert-golden-cases/1 JSON)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", opts->out, "Output folder (one .npy per named output, under its base name)")->required();
  cmd->add_option("--model", opts->model, "Checkpoint folder (default: the one the cases file names)")->check(CLI::ExistingDirectory);
  cmd->add_option("--disable", opts->disable, "Extra heads to disable (uniform policy): LAYER:HEAD,... e.g. 3:7,5:all");
  cmd->add_option("--dtype", opts->dtype, "Computation type")->check(CLI::IsMember({"float32", "float64"}));
  auto* check = cmd->add_flag("--check", opts->check, "Compare every output with the expected file and fail outside tolerance");
  cmd->add_option("--against", opts->against,
                  "Compare the forward outputs with those an earlier run (same --dtype) wrote into this folder")
      ->check(CLI::ExistingDirectory)
      ->excludes(check);
  cmd->callback([opts] {
    const int status = opts->dtype == "float64" ? run_cases<double>(*opts) : run_cases<float>(*opts);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace darkbert::cli
