// Tests for study/finetune_table.hpp (Table 1): a whole table on tiny slices of MRPC and STS-B with the
// real-vocabulary golden BERT (every setting, kept checkpoints), resuming run by run, the
// untrained setting as the seeded head scored as made, a causal model (GPT-2), mean ± sd and the paper's
// values in table.md/table.json, merging tables, save/load, and bad input named.
#include <doctest/doctest.h>

#include <cmath>       // std::isnan
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/finetune_table.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace {

namespace study = darkbert::study;
using darkbert::test::shared_root;

// The real-vocabulary golden encoder as a pretrained checkpoint folder with its tokenizer.
std::filesystem::path bert_checkpoint() {
  static const auto dir = [] {
    const auto d = darkbert::test::scratch_dir("study_finetune_table_bert");
    darkbert::Transformer<float>::load(darkbert::test::golden_dir() / "models/bert_model_real_vocab").save(d);
    darkbert::copy_tokenizer_files(darkbert::test::data_dir() / "vocab/bert-base-uncased", d);
    return d;
  }();
  return dir;
}

// A tiny random GPT-2 (LM head, GPT-2's vocabulary, peaked attention) with its tokenizer.
std::filesystem::path gpt2_checkpoint() {
  const auto d = darkbert::test::scratch_dir("study_finetune_table_gpt2");
  auto c = darkbert::ModelConfig::gpt2_shape(2, 16, 4, 32, 50257, 64);
  c.architecture = "GPT2LMHeadModel";
  darkbert::Transformer<float>::random(c, darkbert::TaskHeads::for_architecture(c), 3).save(d);
  darkbert::copy_tokenizer_files(darkbert::test::data_dir() / "vocab/gpt2", d);
  return d;
}

const study::FineTuneRecipe tiny{.epochs = 1, .batch_size = 8, .learning_rate = 1e-3, .max_train = 24, .max_eval = 20,
                                 .max_length = 32};

study::FineTuneRow row(const char* task, const char* setting, std::uint64_t seed, const char* metric, double value) {
  return {task, setting, seed, metric, value, 0.684, 1.0};
}

}  // namespace

TEST_CASE("run_fine_tune_table: every setting and seed of two tasks, recorded run by run, resumed, checkpoints kept") {
  const auto model = bert_checkpoint();
  const auto out = darkbert::test::scratch_dir("study_finetune_table_run");
  std::vector<std::string> log;
  study::FineTuneTablePlan plan{.tasks = {darkbert::GlueTask::mrpc, darkbert::GlueTask::stsb}, .seeds = 1, .first_seed = 2,
                                .recipe = tiny};
  plan.options = {.keep_checkpoint = true, .log = [&](const std::string& line) { log.push_back(line); }};
  const auto table = study::run_fine_tune_table(shared_root(), model, model, out, plan);
  // MRPC: accuracy + f1, STS-B: pearson + spearman; x 4 settings, seed 2.
  CHECK(table.rows.size() == 16);
  CHECK(table.task_order() == std::vector<std::string>{"MRPC", "STS-B"});
  CHECK(table.setting_order() == std::vector<std::string>{"pretrained", "random", "frozen", "untrained"});
  CHECK(log.front() == "== MRPC, pretrained, seed 2");
  for (const char* f : {"recipe.json", "runs.csv", "table.md", "table.json"}) CHECK_MESSAGE(std::filesystem::exists(out / f), f);

  // The kept checkpoint of (MRPC, seed 2) is the classifier that scored the row.
  const auto kept = study::fine_tuned_checkpoint_dir(out, darkbert::GlueTask::mrpc, 2);
  CHECK(kept == out / "checkpoints" / "MRPC" / "seed-2");
  REQUIRE(study::has_fine_tuned_checkpoint(kept));
  const auto classifier = darkbert::Transformer<float>::load(kept);
  const auto tokenizer = darkbert::Tokenizer::from_directory(kept);
  const auto data = study::load_fine_tune_data(shared_root(), darkbert::GlueTask::mrpc, tokenizer, tiny);
  CHECK(data.eval.size() == 20);
  CHECK(data.train.size() == 24);
  const auto metrics = darkbert::read_json_file(kept / "metrics.json");
  CHECK(metrics["seed"] == 2);
  CHECK(metrics["setting"] == "pretrained");
  CHECK(darkbert::accuracy_metric(darkbert::predict(classifier, data.eval, tokenizer.pad_id()), data.eval.labels) ==
        metrics["scores"]["accuracy"].get<double>());
  CHECK_FALSE(std::filesystem::exists(study::fine_tuned_checkpoint_dir(out, darkbert::GlueTask::mrpc, 3)));

  // A rerun does nothing; a unit whose kept checkpoint went missing is run again and its rows replaced.
  const auto before = darkbert::detail::read_text_file(out / "runs.csv", "runs");
  CHECK_FALSE(study::run_fine_tune_table_unit(shared_root(), model, model, out,
                                              {darkbert::GlueTask::stsb, study::FineTuneSetting::random, 2}, tiny, plan.options));
  study::run_fine_tune_table(shared_root(), model, model, out, plan);
  CHECK(darkbert::detail::read_text_file(out / "runs.csv", "runs") == before);
  std::filesystem::remove_all(kept);
  CHECK(study::run_fine_tune_table_unit(shared_root(), model, model, out,
                                        {darkbert::GlueTask::mrpc, study::FineTuneSetting::pretrained, 2}, tiny, plan.options));
  CHECK(study::has_fine_tuned_checkpoint(kept));
  const auto again = study::FineTuneTable::load(out);
  CHECK(again.rows.size() == 16);
  // The same seed and data give the same run: the replaced rows carry the same values.
  for (const auto& r : again.rows)
    for (const auto& s : table.rows)
      if (r.task == s.task && r.setting == s.setting && r.seed == s.seed && r.metric == s.metric)
        CHECK(r.value == doctest::Approx(s.value).epsilon(1e-6));

  // Another recipe in the same folder is refused by name, before any run.
  auto other = plan;
  other.recipe.epochs = 2;
  CHECK(darkbert::test::message_of([&] { study::run_fine_tune_table(shared_root(), model, model, out, other); })
            .find("recipe.json has epochs = 1, this run asks for 2") != std::string::npos);
  // A damaged runs.csv is named with its line.
  darkbert::test::write_file(out / "runs.csv", before + "MRPC,pretrained,one,accuracy,0.5,0.5,1.0\n");
  CHECK(darkbert::test::message_of([&] { study::FineTuneTable::load(out); }).find("runs.csv:18: not a number") !=
        std::string::npos);
}

TEST_CASE("fine_tune_and_score: the untrained setting is the seeded head scored as made; random differs from pretrained") {
  const auto model_dir = bert_checkpoint();
  const auto checkpoint = darkbert::Transformer<float>::load(model_dir);
  const auto tokenizer = darkbert::Tokenizer::from_directory(model_dir);
  const auto data = study::load_fine_tune_data(shared_root(), darkbert::GlueTask::mrpc, tokenizer, tiny);
  const auto untrained = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::untrained), 5, tiny);
  CHECK_FALSE(untrained.trained);
  CHECK(untrained.steps == 0);
  CHECK(untrained.epochs == 0);
  CHECK(untrained.train_examples == 0);
  CHECK(untrained.train_loss.empty());
  const auto config = study::classifier_config(checkpoint.config(), darkbert::GlueTask::mrpc, tokenizer);
  const auto as_made = checkpoint.with_task_heads(config, darkbert::TaskHeads::for_architecture(config), 5);
  const auto predictions = darkbert::predict(as_made, data.eval, tokenizer.pad_id());
  CHECK(untrained.scores.at("accuracy") == darkbert::accuracy_metric(predictions, data.eval.labels));
  CHECK(untrained.scores.at("f1") == darkbert::glue_metric_function(darkbert::GlueMetric::f1)(predictions, data.eval.labels));
  CHECK(untrained.per_epoch.size() == 1);
  CHECK(untrained.per_epoch[0]["epoch"] == 0);

  const auto pretrained = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::pretrained), 5, tiny);
  const auto random = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::random), 5, tiny);
  const auto frozen = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::frozen), 5, tiny);
  CHECK(pretrained.steps == 3);  // 24 examples in batches of 8, one epoch
  CHECK(pretrained.init == "pretrained");
  CHECK(random.init == "random");
  CHECK(frozen.freeze_encoder);
  CHECK(pretrained.train_loss != random.train_loss);
  CHECK(pretrained.train_loss != frozen.train_loss);
  const auto j = pretrained.to_json();
  for (const char* key : {"task", "data", "model", "init", "freeze_encoder", "seed", "epochs", "batch", "learning_rate",
                          "max_length", "train_examples", "eval_examples", "eval_split", "majority_rate", "scores",
                          "per_epoch", "train_loss", "steps", "seconds", "examples_per_second"})
    CHECK_MESSAGE(j.contains(key), key);  // the keys of `darkbert finetune`'s metrics.json
  CHECK(j["majority_rate"].get<double>() == data.eval.majority_rate());

  // The recipe's dropout, not the checkpoint's, unless it is negative.
  REQUIRE(checkpoint.config().hidden_dropout == 0.1);
  REQUIRE(checkpoint.config().attention_dropout == 0.1);
  auto without = tiny, as_checkpoint = tiny;
  without.dropout = 0, as_checkpoint.dropout = -1;
  const auto pretrained_without = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::pretrained), 5, without);
  const auto pretrained_as_checkpoint = study::fine_tune_and_score(checkpoint, tokenizer, data, study::spec_of(study::FineTuneSetting::pretrained), 5, as_checkpoint);
  CHECK(tiny.dropout == 0.1);
  CHECK(pretrained_without.train_loss != pretrained.train_loss);
  CHECK(pretrained_as_checkpoint.train_loss == pretrained.train_loss);
  CHECK(study::table_recipe(model_dir, without)["dropout"] == 0.0);
}

TEST_CASE("run_fine_tune_table_unit on a causal model (GPT-2): padded with <|endoftext|>, checkpoint kept") {
  const auto model = gpt2_checkpoint();
  const auto out = darkbert::test::scratch_dir("study_finetune_table_gpt2_out");
  const study::FineTuneTableOptions options{.keep_checkpoint = true};
  CHECK(study::run_fine_tune_table_unit(shared_root(), model, model, out,
                                        {darkbert::GlueTask::rte, study::FineTuneSetting::pretrained, 1}, tiny, options));
  CHECK(study::run_fine_tune_table_unit(shared_root(), model, model, out,
                                        {darkbert::GlueTask::rte, study::FineTuneSetting::untrained, 1}, tiny, options));
  const auto table = study::FineTuneTable::load(out);
  CHECK(table.rows.size() == 2);  // RTE: accuracy only
  const auto kept = study::fine_tuned_checkpoint_dir(out, darkbert::GlueTask::rte, 1);
  const auto classifier = darkbert::Transformer<float>::load(kept);
  CHECK(classifier.config().causal);
  CHECK(classifier.config().architecture == "GPT2ForSequenceClassification");
  CHECK(classifier.config().pad_token_id == darkbert::Tokenizer::from_directory(model).pad_id());
  CHECK_FALSE(std::filesystem::exists(study::fine_tuned_checkpoint_dir(out, darkbert::GlueTask::rte, 1).string() + ".partial"));
}

TEST_CASE("FineTuneTable: mean ± sd in %, the paper's values beside the settings it has, the recipe stated (by hand)") {
  study::FineTuneTable t;
  t.recipe = study::table_recipe("m", {.learning_rate = 5e-4, .max_train = 8000});
  t.rows = {row("MRPC", "pretrained", 1, "accuracy", 0.80), row("MRPC", "pretrained", 2, "accuracy", 0.82),
            row("MRPC", "pretrained", 3, "accuracy", 0.86), row("MRPC", "frozen", 1, "accuracy", 0.70),
            row("MRPC", "untrained", 1, "accuracy", 0.32), row("MRPC", "untrained", 2, "accuracy", 0.34),
            row("STS-B", "pretrained", 1, "pearson", 0.5)};
  const auto cells = t.cells();
  REQUIRE(cells.size() == 6);  // (MRPC accuracy, STS-B pearson) x (pretrained, frozen, untrained)
  CHECK(cells[0].percent.mean == doctest::Approx(82.666667));
  CHECK(cells[0].percent.sd == doctest::Approx(3.0550505));
  CHECK(cells[0].seeds == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(*cells[0].paper_percent == 82.3);
  CHECK_FALSE(cells[1].paper_percent.has_value());  // the paper has no frozen-encoder column
  CHECK(*cells[2].paper_percent == 31.6);           // "pretrained", not fine-tuned
  CHECK(cells[2].percent.sd == doctest::Approx(1.4142136));
  CHECK(std::isnan(cells[4].percent.mean));  // STS-B frozen: no runs
  const auto md = t.markdown();
  for (const char* expected :
       {"| task | metric | fine-tuned from pretrained | paper | frozen encoder + trained head | pretrained, untrained head | "
        "paper (not fine-tuned) | majority class |",
        "| MRPC | accuracy | 82.7 ± 3.1 | 82.3 | 70.0 | 33.0 ± 1.4 | 31.6 | 68.4 |",
        "| STS-B | pearson | 50.0 | 82.7 | — | — | 33.1 | — |",
        "over 3 seed(s)", "peak learning rate 0.0005", "training examples: the first 8000 per task",
        "evaluation examples: all"})
    CHECK_MESSAGE(md.find(expected) != std::string::npos, expected, "\n", md);
  const auto s = t.summary();
  CHECK(s["rows"][0]["pretrained"]["mean_percent"].get<double>() == doctest::Approx(82.666667));
  CHECK(s["rows"][0]["frozen"]["paper_percent"].is_null());
  CHECK(s["recipe"]["max_train"] == 8000);

  // Save and load: the same runs and recipe; a table from another machine merges in what it adds.
  const auto dir = darkbert::test::scratch_dir("study_finetune_table_by_hand");
  t.save(dir);
  const auto back = study::FineTuneTable::load(dir);
  CHECK(back.recipe == t.recipe);
  REQUIRE(back.rows.size() == t.rows.size());
  CHECK(back.rows[2].value == 0.86);
  CHECK(back.markdown() == t.markdown());
  study::FineTuneTable other;
  other.recipe = t.recipe;
  other.rows = {row("MRPC", "pretrained", 3, "accuracy", 0.1), row("MRPC", "random", 1, "accuracy", 0.6)};
  auto merged = back;
  merged.merge(other);
  CHECK(merged.rows.size() == t.rows.size() + 1);  // (MRPC, pretrained, 3) was there already
  other.recipe["epochs"] = 4;
  CHECK(darkbert::test::message_of([&] { merged.merge(other); }).find("cannot merge runs of recipe") != std::string::npos);
}

TEST_CASE("finetune_table: settings, the paper's values and bad input named") {
  CHECK(study::parse_fine_tune_setting("untrained") == study::FineTuneSetting::untrained);
  CHECK(darkbert::test::message_of([] { study::parse_fine_tune_setting("normal"); }) ==
        "unknown fine-tuning setting 'normal' (expected pretrained, random, frozen or untrained)");
  CHECK(study::paper_table1("QNLI", "accuracy")->not_finetuned == 52.8);
  CHECK_FALSE(study::paper_table1("STS-B", "spearman").has_value());
  CHECK(study::spec_of(study::FineTuneSetting::random).random_weights);
  CHECK_FALSE(study::spec_of(study::FineTuneSetting::frozen).train_encoder);
  const auto dir = darkbert::test::scratch_dir("study_finetune_table_bad");
  darkbert::test::write_file(dir / "runs.csv", "task,setting,seed,metric,value,majority_rate,seconds\nMRPC,pretrained,1\n");
  CHECK(darkbert::test::message_of([&] { study::read_fine_tune_runs(dir / "runs.csv"); })
            .find("runs.csv:2: expected task,setting,seed,metric,value,majority_rate,seconds") != std::string::npos);
  darkbert::test::write_file(dir / "runs.csv", "task,setting,seed,metric,value,majority_rate,seconds\nMRPC,tuned,1,accuracy,0.5,0.5,1\n");
  CHECK(darkbert::test::message_of([&] { study::read_fine_tune_runs(dir / "runs.csv"); })
            .find("unknown fine-tuning setting 'tuned'") != std::string::npos);
  CHECK(darkbert::test::message_of([&] { study::FineTuneTable::load(dir / "none"); }).find("recipe.json: cannot open") !=
        std::string::npos);
  study::FineTuneTablePlan plan{.seeds = 0};
  CHECK(darkbert::test::message_of([&] { study::units_of(plan); }).find("at least one seed") != std::string::npos);
}
