// Loading checkpoints: name variants, sharding, and every bad-input error path of the loader and forward.
#include <doctest/doctest.h>

#include <cstring>     // std::memcpy
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <limits>      // std::numeric_limits

#include "darkbert/model/case_file.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using darkbert::test::golden_dir;
using Model = darkbert::Transformer<float>;

std::string load_error(const fs::path& dir) {
  try {
    Model::load(dir);
  } catch (const darkbert::error& e) {
    return e.what();
  }
  return "";
}

// Copies a golden model folder into a scratch dir for editing.
fs::path copy_model(const std::string& model, const std::string& scratch) {
  const auto dir = darkbert::test::scratch_dir(scratch);
  fs::copy(golden_dir() / "models" / model, dir, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(dir)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Sets one field of the folder's config.json.
void set_config_field(const fs::path& dir, const std::string& key, const nlohmann::json& value) {
  auto config = darkbert::read_json_file(dir / "config.json");
  config[key] = value;
  write_text(dir / "config.json", config.dump());
}

// Every tensor of a safetensors file, as raw bytes (to change and write back).
std::map<std::string, darkbert::TensorBytes> read_tensors(const fs::path& path) {
  std::map<std::string, darkbert::TensorBytes> tensors;
  darkbert::SafetensorsFile file(path);
  for (const auto& info : file.tensors()) {
    darkbert::TensorBytes t{info.dtype, info.shape, {}};
    t.bytes.assign(file.raw(info), file.raw(info) + (info.end - info.begin));
    tensors[info.name] = std::move(t);
  }
  return tensors;
}

// Rewrites a safetensors file keeping only tensors accepted by `keep`.
template <class Keep>
void filter_tensors(const fs::path& path, Keep keep) {
  auto tensors = read_tensors(path);
  std::erase_if(tensors, [&](const auto& entry) { return !keep(entry.first); });
  darkbert::write_safetensors(path, tensors);
}

}  // namespace

TEST_CASE("name variants load to identical parameters") {
  const auto plain = Model::load(golden_dir() / "models" / "bert_model");
  for (const char* variant : {"bert_model_prefixed", "bert_model_legacy_names"}) {
    const auto other = Model::load(golden_dir() / "models" / variant);
    CHECK(other.params().blocks[1].qkv.weight == plain.params().blocks[1].qkv.weight);
    CHECK(other.params().blocks[2].mlp_norm.weight == plain.params().blocks[2].mlp_norm.weight);
    CHECK(other.params().embeddings.norm->bias == plain.params().embeddings.norm->bias);
  }
  const auto gpt = Model::load(golden_dir() / "models" / "gpt2_lm");
  const auto gpt_buffers = Model::load(golden_dir() / "models" / "gpt2_lm_buffers");
  CHECK(gpt.params().blocks[0].qkv.weight == gpt_buffers.params().blocks[0].qkv.weight);
  CHECK(gpt.params().blocks[0].qkv.bias == gpt_buffers.params().blocks[0].qkv.bias);  // .attn.c_attn.bias, not .attn.bias
  CHECK(gpt_buffers.unused_tensors().empty());
  const auto sharded = Model::load(golden_dir() / "models" / "bert_seqcls3_sharded");
  const auto single = Model::load(golden_dir() / "models" / "bert_seqcls3");
  CHECK(sharded.params().task_heads.classifier->out.weight == single.params().task_heads.classifier->out.weight);
}

TEST_CASE("heads are detected from the tensors present") {
  const auto pre = Model::load(golden_dir() / "models" / "bert_pretraining");
  CHECK(pre.params().task_heads.masked_lm.has_value());
  CHECK(pre.params().task_heads.next_sentence.has_value());
  const auto reg = Model::load(golden_dir() / "models" / "bert_seqreg");
  CHECK(reg.params().task_heads.classifier->out.out() == 1);
  const auto distil = Model::load(golden_dir() / "models" / "distilbert_seqcls");
  CHECK(distil.config().labels == std::vector<std::string>{"NEGATIVE", "POSITIVE"});
  CHECK(distil.params().task_heads.classifier->pre.has_value());
}

TEST_CASE("bad checkpoints are rejected with the file, tensor and problem named") {
  SUBCASE("missing folder") { CHECK(load_error("/nonexistent/model").find("/nonexistent/model") != std::string::npos); }
  SUBCASE("unknown model_type") {
    const auto dir = copy_model("bert_model", "load_model_type");
    write_text(dir / "config.json", R"({"model_type": "llama", "vocab_size": 99})");
    const auto e = load_error(dir);
    CHECK(e.find("config.json: unknown model_type \"llama\"") != std::string::npos);
  }
  SUBCASE("malformed config.json") {
    const auto dir = copy_model("bert_model", "load_bad_config");
    write_text(dir / "config.json", R"({"model_type": "bert", )");
    CHECK(load_error(dir).find("config.json: malformed JSON") != std::string::npos);
  }
  SUBCASE("tensor shape disagreeing with config.json") {
    const auto dir = copy_model("bert_model", "load_shape");
    set_config_field(dir, "intermediate_size", 38);
    const auto e = load_error(dir);
    CHECK(e.find("tensor 'encoder.layer.0.intermediate.dense.weight' has shape [37, 32]") != std::string::npos);
    CHECK(e.find("requires [38, 32]") != std::string::npos);
  }
  SUBCASE("hidden size not divisible by heads") {
    const auto dir = copy_model("bert_model", "load_heads");
    set_config_field(dir, "num_attention_heads", 5);
    CHECK(load_error(dir).find("not divisible") != std::string::npos);
  }
  SUBCASE("missing tensor") {
    const auto dir = copy_model("bert_model", "load_missing");
    filter_tensors(dir / "model.safetensors", [](const std::string& n) { return n != "encoder.layer.1.attention.self.key.bias"; });
    const auto e = load_error(dir);
    CHECK(e.find("missing tensor 'encoder.layer.1.attention.self.key.bias'") != std::string::npos);
  }
  SUBCASE("no weights file") {
    const auto dir = copy_model("bert_model", "load_noweights");
    fs::remove(dir / "model.safetensors");
    CHECK(load_error(dir).find("neither model.safetensors nor model.safetensors.index.json") != std::string::npos);
  }
  SUBCASE("shard index naming a tensor its shard lacks") {
    const auto dir = copy_model("bert_seqcls3_sharded", "load_shard");
    auto index = darkbert::read_json_file(dir / "model.safetensors.index.json");
    index["weight_map"]["bert.made.up"] = index["weight_map"].begin().value();
    write_text(dir / "model.safetensors.index.json", index.dump());
    CHECK(load_error(dir).find("weight_map puts 'bert.made.up'") != std::string::npos);
  }
  SUBCASE("config asking for more parameters than the folder stores: refused before allocating") {
    const auto dir = copy_model("bert_model", "load_too_big");
    set_config_field(dir, "num_hidden_layers", 4000);  // within the per-field limit, far beyond the 3 stored layers
    const auto e = load_error(dir);
    CHECK(e.find("config.json: the config describes") != std::string::npos);
    CHECK(e.find("config.json does not match the weights") != std::string::npos);
  }
  SUBCASE("a NaN weight is refused by file, tensor and index") {
    const auto dir = copy_model("bert_model", "load_nan");
    auto tensors = read_tensors(dir / "model.safetensors");
    auto& bias = tensors.at("encoder.layer.1.output.dense.bias");
    REQUIRE(bias.dtype == darkbert::DType::F32);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bias.bytes.data() + 3 * sizeof(float), &nan, sizeof nan);
    darkbert::write_safetensors(dir / "model.safetensors", tensors);
    const auto e = load_error(dir);
    CHECK(e.find("model.safetensors") != std::string::npos);
    CHECK(e.find("encoder.layer.1.output.dense.bias") != std::string::npos);
    CHECK(e.find("NaN") != std::string::npos);
  }
  SUBCASE("classifier rows disagreeing with id2label") {
    const auto dir = copy_model("bert_seqcls3", "load_labels");
    set_config_field(dir, "id2label", nlohmann::json({{"0", "a"}, {"1", "b"}}));
    CHECK(load_error(dir).find("lists 2 labels (id2label) but 'classifier.weight' has 3 rows") != std::string::npos);
  }
}

TEST_CASE("bad inputs to forward are rejected") {
  const auto model = Model::load(golden_dir() / "models" / "bert_model");  // 40 positions, vocab 99, 2 types
  auto forward_error = [&](const darkbert::Batch& b) {
    try {
      model.forward(b);
    } catch (const darkbert::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto ok = darkbert::Batch::from_rows({{2, 5, 7}});
  CHECK(forward_error(ok).empty());
  CHECK(forward_error(darkbert::Batch::from_rows({std::vector<int>(41, 5)})).find("exceeds the model's max_position_embeddings (40)") != std::string::npos);
  CHECK(forward_error(darkbert::Batch::from_rows({{2, 99, 7}})).find("input_ids[0][1] = 99 is outside the vocabulary [0, 99)") != std::string::npos);
  CHECK(forward_error(darkbert::Batch::from_rows({{2, 5}}, 0, {{0, 2}})).find("token_type_ids[0][1] = 2") != std::string::npos);
  auto bad_mask = ok;
  bad_mask.attention_mask = {1, 2, 1};
  CHECK(forward_error(bad_mask).find("attention_mask values must be 0 or 1") != std::string::npos);
  auto short_ids = ok;
  short_ids.input_ids.pop_back();
  CHECK(forward_error(short_ids).find("input_ids has 2 entries, expected B*L = 3") != std::string::npos);

  // Empty batches and rows without a real token (GPT-2's sequence head would read position -1).
  CHECK(forward_error(darkbert::Batch{}).find("batch size 0") != std::string::npos);
  CHECK(forward_error(darkbert::Batch::from_rows({{}})).find("sequences of length 0") != std::string::npos);
  const auto gpt2 = Model::load(golden_dir() / "models" / "gpt2_seqcls");
  CHECK_THROWS_WITH_AS(gpt2.forward(darkbert::Batch::from_rows({{5, 6}, {}})), doctest::Contains("row 1 has no real token"),
                       darkbert::error);

  const auto roberta = Model::load(golden_dir() / "models" / "roberta_model");  // 42 positions, offset 2
  CHECK(roberta.config().max_sequence_length() == 40);
  CHECK_THROWS_WITH_AS(roberta.forward(darkbert::Batch::from_rows({std::vector<int>(41, 5)})),
                       doctest::Contains("RoBERTa position offset"), darkbert::error);
}

TEST_CASE("MLM logits at chosen positions equal the full logits there") {
  const auto cases = darkbert::CaseFile::read(golden_dir() / "cases" / "bert_pretraining.json");
  const auto model = darkbert::Transformer<double>::load(cases.model_dir);
  const auto& batch = cases.cases.front().batch;
  const auto full = model.forward(batch);
  darkbert::ForwardOptions<double> options;
  options.logit_positions = {{0, 1}, {1, 3}, {0, 0}};
  const auto some = model.forward(batch, options);
  REQUIRE(some.selected_logits.shape()[0] == 3);
  CHECK(some.token_logits.size() == 0);
  for (std::size_t r = 0; r < 3; ++r) {
    const auto [b, i] = options.logit_positions[r];
    for (int v = 0; v < model.config().vocab_size; ++v)
      CHECK(some.selected_logits(r, v) == doctest::Approx(full.token_logits(b, i, v)).epsilon(1e-12));
  }
  options.logit_positions = {{0, 999}};
  CHECK_THROWS_WITH_AS(model.forward(batch, options), doctest::Contains("logit_positions[0]"), darkbert::error);
}

TEST_CASE("save reports a full disk for config.json and model.safetensors, naming the file") {
  const auto model = Model::load(golden_dir() / "models" / "bert_model");
  for (const char* file : {"config.json", "model.safetensors"}) {
    const auto dir = darkbert::test::scratch_dir(std::string("save_full_") + file);
    fs::create_symlink("/dev/full", dir / file);  // a device: written in place, and the write fails
    const auto e = darkbert::test::message_of([&] { model.save(dir); });
    CHECK(e.find(file) != std::string::npos);
    CHECK(e.find("No space left on device") != std::string::npos);
  }
}

TEST_CASE("save then load reproduces every family bit for bit") {
  for (const char* name : {"bert_pretraining", "bert_seqcls3", "distilbert_seqcls", "roberta_model", "gpt2_lm", "bert_seqreg"}) {
    const auto model = Model::load(golden_dir() / "models" / name);
    const auto dir = darkbert::test::scratch_dir(std::string("save_") + name);
    model.save(dir);
    const auto again = Model::load(dir);
    CHECK(again.unused_tensors().empty());
    const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}, {3, 4}});
    const auto a = model.forward(batch), b = again.forward(batch);
    CHECK_MESSAGE(a.hidden_states == b.hidden_states, name);
    CHECK(a.sequence_logits == b.sequence_logits);
    CHECK(a.token_logits == b.token_logits);
    CHECK(a.next_sentence_logits == b.next_sentence_logits);
  }
}

TEST_CASE("require_outputs names the tensor a requested output needs, before any forward pass") {
  auto asking = [](const std::string& output) {
    darkbert::CaseFile file;
    file.path = "cases.json";
    darkbert::Case c;
    c.name = "one";
    c.outputs[output] = "expected/one." + output + ".npy";
    file.cases.push_back(c);
    return file;
  };
  auto error = [&](const std::string& model_name, const std::string& output) {
    const auto dir = golden_dir() / "models" / model_name;
    const auto model = Model::load(dir);
    return darkbert::test::message_of([&] { darkbert::require_outputs(asking(output), model, dir); });
  };
  for (const char* always : {"embeddings", "hidden_states", "attentions", "last_hidden_state"})
    CHECK(error("gpt2_lm", always).empty());
  CHECK(error("bert_pretraining", "pooled").empty());
  CHECK(error("bert_pretraining", "nsp_logits").empty());
  CHECK(error("bert_pretraining", "mlm_logits").empty());
  CHECK(error("gpt2_lm", "logits").empty());
  CHECK(error("gpt2_seqcls", "logits").empty());
  CHECK(error("distilbert_seqcls", "pooled") ==
        "cases.json: case 'one' asks for output 'pooled', which needs the tensor 'pooler.dense.weight', and the "
        "checkpoint " + (golden_dir() / "models" / "distilbert_seqcls").string() + " has none");
  CHECK(error("bert_model", "nsp_logits").find("'cls.seq_relationship.weight'") != std::string::npos);
  CHECK(error("bert_model", "mlm_logits").find("'cls.predictions.transform.dense.weight'") != std::string::npos);
  CHECK(error("bert_model", "logits").find("'classifier.weight (or a masked-LM head)'") != std::string::npos);
  CHECK(error("gpt2_seqcls", "mlm_logits").find("GPT-2 has no masked-LM head") != std::string::npos);
  CHECK(error("bert_model", "attention").find("unknown output name 'attention'") != std::string::npos);
}

// Regression test from fuzz_checkpoint_forward's reproducer (checkpoint_forward-crash-0675…): a GPT-2
// checkpoint whose h.2.attn.c_attn.weight holds the finite value 2.4279e38 at flat index 1650 loads (the
// value is finite) but overflows float32 in the forward pass. A runner must refuse the output by name.
TEST_CASE("an output that overflowed to inf/NaN is refused by case, output and index") {
  const auto dir = copy_model("gpt2_lm", "load_huge_weight");
  auto tensors = read_tensors(dir / "model.safetensors");
  const float huge = 2.4279019879472985e38f;
  std::memcpy(tensors.at("transformer.h.2.attn.c_attn.weight").bytes.data() + 1650 * sizeof(float), &huge, sizeof huge);
  darkbert::write_safetensors(dir / "model.safetensors", tensors);
  const auto model = Model::load(dir);
  const auto out = model.forward(darkbert::Batch::from_rows({{2, 5, 7, 9, 11}, {3, 4}}));
  const xt::xarray<float> hidden = out.last_hidden_state;
  const auto e = darkbert::test::message_of([&] { darkbert::require_finite_output(hidden, "forward", "last_hidden_state"); });
  CHECK(e.find("case 'forward': output 'last_hidden_state' holds the non-finite value") != std::string::npos);
  const xt::xarray<float> finite = Model::load(golden_dir() / "models" / "gpt2_lm")
                                       .forward(darkbert::Batch::from_rows({{2, 5, 7, 9, 11}, {3, 4}}))
                                       .last_hidden_state;
  CHECK(darkbert::test::message_of([&] { darkbert::require_finite_output(finite, "forward", "last_hidden_state"); }).empty());
}
