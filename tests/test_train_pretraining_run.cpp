// train/pretraining_run.hpp: a resumed run first cuts its logs back to its checkpoint's step (the rows
// after it are logged again), and a damaged log is reported by file and line. The whole run is tested
// through train/default_models.hpp (tests/test_train_default_models.cpp) and `darkbert pretrain`
// (tests/cli_train.cmake: kill and resume end bit-identical); here also that the recipe's AdamW settings
// and query/key init reach the run.
#include <doctest/doctest.h>

#include <string>      // std::string

#include <filesystem>  // std::filesystem

#include "darkbert/train/pretraining_run.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

TEST_CASE("trim_log keeps the header and the rows up to the checkpoint's step") {
  const auto log = darkbert::test::write_file(darkbert::test::scratch_dir("trim_log") / "eval.csv",
                                              "step,loss\n0,9.5\n100,7.0\n200,6.5\n300,6.1\n");
  darkbert::detail::trim_log(log, 200);
  CHECK(read_bytes(log) == "step,loss\n0,9.5\n100,7.0\n200,6.5\n");
  darkbert::detail::trim_log(log, 0);
  CHECK(read_bytes(log) == "step,loss\n0,9.5\n");
  darkbert::detail::trim_log(log.parent_path() / "absent.csv", 5);  // nothing logged yet: nothing to do
  CHECK_FALSE(std::filesystem::exists(log.parent_path() / "absent.csv"));
}

TEST_CASE("a damaged log is named by file and line instead of throwing a bare conversion error") {
  const auto log = darkbert::test::write_file(darkbert::test::scratch_dir("trim_log_damaged") / "eval.csv",
                                              "step,loss\n0,9.5\n1x0,7.0\n");
  CHECK(darkbert::test::message_of([&] { darkbert::detail::trim_log(log, 200); }) ==
        log.string() + ":3: the step '1x0' is not a number (a damaged log; remove the row)");
  CHECK(read_bytes(log) == "step,loss\n0,9.5\n1x0,7.0\n");  // left as it was
}

TEST_CASE("the recipe's AdamW beta2, weight decay and query/key init reach the run; their defaults change nothing") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), darkbert::test::scratch_dir("adamw_cache"));
  const auto dir = darkbert::test::scratch_dir("adamw_runs");
  auto run = [&](const std::string& name, double beta2, double weight_decay, double qk_init_std) {
    auto r = darkbert::named_recipe("tiny", "gpt2");
    r.seq = 32, r.steps = 6, r.max_documents = 20, r.probe_pairs = 4, r.eval_every = 0, r.checkpoint_every = 0;
    r.softmax_draws = 256, r.heldout_examples = 16;
    r.adam_beta2 = beta2, r.weight_decay = weight_decay, r.qk_init_std = qk_init_std;
    darkbert::run_pretraining(root, {.out = dir / name, .recipe = r, .show_progress = false});
    return read_bytes(dir / name / "model.safetensors");
  };
  const darkbert::AdamWOptions defaults;
  const auto base = run("defaults", defaults.beta2, defaults.weight_decay, darkbert::Transformer<float>::random_init_std);
  CHECK(run("defaults_again", 0.999, 0.01, 0.02) == base);
  CHECK(run("beta2", 0.95, 0.01, 0.02) != base);
  CHECK(run("decay", 0.999, 0.2, 0.02) != base);
  CHECK(run("qk_init", 0.999, 0.01, 0.05) != base);
}
