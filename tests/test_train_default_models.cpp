// train/default_models.hpp (and train/pretraining_run.hpp, which it runs): the first use pretrains the
// model into the cache as a whole Hugging Face folder, later uses read it without training, and a first
// use that was killed resumes and ends with the same bytes as one that never stopped. A seconds-long
// recipe stands in for `mini`.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem
#include <sstream>     // std::ostringstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/train/default_models.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

namespace {

namespace fs = std::filesystem;

darkbert::PretrainRecipe quick_recipe() {
  auto r = darkbert::named_recipe("tiny", "bert");
  r.steps = 6, r.max_documents = 30, r.probe_pairs = 4, r.eval_every = 3, r.checkpoint_every = 3;
  r.heldout_examples = 32;  // each evaluation is a full pass over them
  return r;
}

struct StopDefaultModelRun {};  // thrown after a checkpoint: the run ends as a kill would end it

}  // namespace

TEST_CASE("default_model pretrains on first use into <cache>/models, then serves the cached folder") {
  const auto cache = darkbert::test::scratch_dir("default_models_first_use");
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), cache);
  const auto expected = cache / "models" / "study-bert-v5";
  CHECK(darkbert::default_model_dir(root, "bert") == expected);
  CHECK(darkbert::default_model_dir(root, "gpt2") == cache / "models" / "study-gpt2-v2");
  CHECK(darkbert::default_model_version("bert") == 5);
  CHECK(darkbert::default_model_version("gpt2") == 2);

  std::ostringstream log;
  const auto dir = darkbert::default_model(root, "bert", {.recipe = quick_recipe(), .show_progress = false, .log = &log});
  CHECK(dir == expected);
  CHECK(log.str().find("; pretraining it (bert, ") != std::string::npos);
  for (const char* name : {"config.json", "model.safetensors", "vocab.txt", "run.json", "eval.csv", "head_masses.png"})
    CHECK_MESSAGE(fs::is_regular_file(dir / name), name);
  CHECK_FALSE(fs::exists(dir / "checkpoint"));
  CHECK_FALSE(fs::exists(cache / "models" / "mini-bert-v2.partial"));
  const auto model = darkbert::Transformer<float>::load(dir);
  CHECK(model.config().num_layers == 2);
  CHECK(model.config().hidden_size == 64);

  // Served from the cache: nothing trained, nothing rewritten.
  const auto written = fs::last_write_time(dir / "model.safetensors");
  std::ostringstream again;
  CHECK(darkbert::default_model(root, "bert", {.recipe = quick_recipe(), .show_progress = false, .log = &again}) == dir);
  CHECK(again.str().empty());
  CHECK(fs::last_write_time(dir / "model.safetensors") == written);

  // A first use killed after its checkpoint at step 3 resumes there and ends with the same weights.
  const auto cache2 = darkbert::test::scratch_dir("default_models_killed");
  const auto root2 = darkbert::DataRoot::single(darkbert::test::data_dir(), cache2);
  const auto partial = darkbert::default_model_dir(root2, "bert").string() + ".partial";
  CHECK_THROWS_AS(darkbert::run_pretraining(root2, {.out = partial, .recipe = quick_recipe(), .show_progress = false,
                                                    .after_step = [](const darkbert::PretrainState& s) {
                                                      if (s.step == 4) throw StopDefaultModelRun{};
                                                    }}),
                  StopDefaultModelRun);
  std::ostringstream resumed;
  const auto dir2 = darkbert::default_model(root2, "bert", {.recipe = quick_recipe(), .show_progress = false, .log = &resumed});
  CHECK(resumed.str().find("resuming") != std::string::npos);
  CHECK(read_bytes(dir2 / "model.safetensors") == read_bytes(dir / "model.safetensors"));
}

TEST_CASE("the default models are the study recipe's, cached apart from the mini ones; unknown names are refused") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), darkbert::test::scratch_dir("default_models_names"));
  CHECK(darkbert::default_model_dir(root, "bert").filename() == "study-bert-v5");
  CHECK(darkbert::cached_model_dir(root, "mini", "bert").filename() == "mini-bert-v2");
  CHECK(darkbert::default_model_dir(root, "gpt2").filename() == "study-gpt2-v2");
  CHECK(darkbert::cached_model_dir(root, "mini", "gpt2").filename() == "mini-gpt2-v3");
  const auto study = darkbert::recipe_config(darkbert::named_recipe("study", "bert"));
  CHECK(study.num_layers * study.num_heads >= 48);
  CHECK(darkbert::test::message_of([&] { darkbert::cached_model_dir(root, "reference", "bert"); }) ==
        "default model: no cached model for the recipe 'reference' of bert (study-bert, study-gpt2, mini-bert or mini-gpt2)");
  CHECK(darkbert::cached_model_dir(root, "study", "gpt2").filename() == "study-gpt2-v2");
  const auto gpt2 = darkbert::recipe_config(darkbert::named_recipe("study", "gpt2"));
  CHECK(gpt2.num_layers * gpt2.num_heads >= 48);
  CHECK(gpt2.hidden_size / gpt2.num_heads == 32);
}

TEST_CASE("default_model names a wrong architecture") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), darkbert::test::scratch_dir("default_models_arch"));
  CHECK(darkbert::test::message_of([&] { darkbert::default_model_dir(root, "t5"); }) ==
        "default model: arch is 't5' (bert or gpt2)");
}

TEST_CASE("models_in_cache pretrains the absent models at once, each the model it would be alone") {
  // Two small BERTs (a GPT-2's 50k-token output layer would only make the test slower, not stricter).
  auto shorter = quick_recipe();  // other weights
  shorter.steps = 8, shorter.seed = 7, shorter.eval_every = 8, shorter.checkpoint_every = 8;
  auto longer = quick_recipe();
  longer.steps = 12, longer.eval_every = 12, longer.checkpoint_every = 12;  // trains on, alone, once the other is done
  const auto alone_cache = darkbert::test::scratch_dir("models_in_cache_alone");
  const auto alone_root = darkbert::DataRoot::single(darkbert::test::data_dir(), alone_cache);
  const auto longer_alone = darkbert::model_in_cache(alone_root, {alone_cache / "models" / "long", longer}, false);
  const auto shorter_alone = darkbert::model_in_cache(alone_root, {alone_cache / "models" / "short", shorter}, false);

  const auto cache = darkbert::test::scratch_dir("models_in_cache_at_once");
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), cache);
  std::ostringstream log;
  const auto dirs = darkbert::models_in_cache(root, {{cache / "models" / "long", longer}, {cache / "models" / "short", shorter}}, false, &log);
  REQUIRE(dirs.size() == 2);
  CHECK(dirs[0] == cache / "models" / "long");
  CHECK(dirs[1] == cache / "models" / "short");
  CHECK(read_bytes(dirs[0] / "model.safetensors") == read_bytes(longer_alone / "model.safetensors"));
  CHECK(read_bytes(dirs[1] / "model.safetensors") == read_bytes(shorter_alone / "model.safetensors"));
  CHECK(read_bytes(dirs[0] / "model.safetensors") != read_bytes(dirs[1] / "model.safetensors"));
  CHECK(read_bytes(dirs[0] / "eval.csv").substr(0, 40) == read_bytes(longer_alone / "eval.csv").substr(0, 40));
  const std::string text = log.str();
  CHECK(text.find("pretraining 2 models at once") != std::string::npos);
  CHECK(text.find("model cache: saved " + dirs[0].string()) != std::string::npos);
  CHECK(text.find("model cache: saved " + dirs[1].string()) != std::string::npos);

  // Both cached now: served as they are, in the order asked, nothing logged.
  std::ostringstream again;
  CHECK(darkbert::models_in_cache(root, {{dirs[1], shorter}, {dirs[0], longer}}, false, &again) ==
        std::vector<fs::path>{dirs[1], dirs[0]});
  CHECK(again.str().empty());

  // A training that fails is reported once the other has finished its model.
  auto broken = shorter;
  broken.batch = 0;
  const auto cache3 = darkbert::test::scratch_dir("models_in_cache_error");
  const auto root3 = darkbert::DataRoot::single(darkbert::test::data_dir(), cache3);
  const auto message = darkbert::test::message_of(
      [&] { darkbert::models_in_cache(root3, {{cache3 / "models" / "long", longer}, {cache3 / "models" / "short", broken}}, false); });
  CHECK(message == "pretraining recipe: layers, hidden, heads, ff, seq and batch must be positive");
  CHECK(fs::is_regular_file(cache3 / "models" / "long" / "model.safetensors"));
  CHECK_FALSE(fs::exists(cache3 / "models" / "short"));
}
