// Hostile-input limits (issue #14): every file-controlled size is checked before allocating, every coerced
// JSON number and every path leaving its folder is refused, each with a darkbert::error naming the file.
// Regression tests for the fuzzers' findings sit here too.
#include <doctest/doctest.h>

#include <chrono>      // std::chrono::steady_clock
#include <cmath>       // std::nan
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <limits>      // std::numeric_limits
#include <string>      // std::string

#include <nlohmann/json.hpp>

#include "darkbert/io/checkpoint.hpp"
#include "darkbert/io/json.hpp"
#include "darkbert/io/npy.hpp"
#include "darkbert/io/safetensors.hpp"
#include "darkbert/model/batch.hpp"
#include "darkbert/model/case_file.hpp"
#include "darkbert/model/config.hpp"
#include "darkbert/tokenizer/bpe.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"
#include "bpe_test_access.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using darkbert::test::message_of;

// A safetensors file with the given header (unpadded) and `data_bytes` zero bytes of data.
fs::path safetensors_file(const fs::path& path, const std::string& header, std::size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << std::string(data_bytes, '\0');
  return path;
}

std::string open_error(const fs::path& p) {
  return message_of([&] { darkbert::SafetensorsFile f(p); });
}

darkbert::ModelConfig config_of(const std::string& text) {
  return darkbert::ModelConfig::from_json(darkbert::parse_json(text, "config.json"), "config.json");
}
std::string config_error(const std::string& text) {
  return message_of([&] { config_of(text); });
}

}  // namespace

TEST_CASE("safetensors: element counts that overflow are refused before any arithmetic wraps") {
  const auto dir = darkbert::test::scratch_dir("limits_overflow");
  // 2^32 * 2^32 * 4 bytes wraps to 0 in 64 bits: it must not match the empty byte range.
  const auto e = open_error(safetensors_file(
      dir / "wrap.safetensors", R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0));
  CHECK(e.find("wrap.safetensors: tensor 't': shape [4294967296, 4294967296] has more elements than any file") !=
        std::string::npos);
  CHECK(open_error(safetensors_file(dir / "big.safetensors",
                                    R"({"t":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4))
            .find("out of range") != std::string::npos);
}

TEST_CASE("safetensors: tensors must tile the data area (overlaps, zero-size overlaps, gaps, trailing bytes)") {
  const auto dir = darkbert::test::scratch_dir("limits_tiling");
  // A zero-size tensor between two overlapping ones used to hide the overlap from the neighbour test.
  const auto hidden = open_error(safetensors_file(dir / "hidden.safetensors",
                                                  R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                                  R"("z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
                                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20));
  CHECK(hidden.find("hidden.safetensors: tensors 'a' [0, 16) and 'z' [8, 8) have overlapping data_offsets") !=
        std::string::npos);
  const auto same = open_error(safetensors_file(dir / "same.safetensors",
                                                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  CHECK(same.find("overlapping data_offsets") != std::string::npos);
  const auto gap = open_error(safetensors_file(dir / "gap.safetensors",
                                               R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8));
  CHECK(gap.find("gap.safetensors: 4 unused bytes before tensor 'a'") != std::string::npos);
  const auto tail = open_error(safetensors_file(dir / "tail.safetensors",
                                                R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12));
  CHECK(tail.find("tail.safetensors: 8 bytes after the last tensor's data") != std::string::npos);
}

TEST_CASE("safetensors: duplicate names, deep nesting, non-string metadata, absurd headers") {
  const auto dir = darkbert::test::scratch_dir("limits_header");
  const auto dup = open_error(safetensors_file(dir / "dup.safetensors",
                                               R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                               R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  CHECK(dup.find("dup.safetensors: duplicate key \"t\" in one JSON object") != std::string::npos);
  std::string deep = R"({"__metadata__":{"x":)";
  for (int i = 0; i < 100000; ++i) deep += "[";
  CHECK(open_error(safetensors_file(dir / "deep.safetensors", deep, 0)).find("nested deeper than 64 levels") !=
        std::string::npos);
  CHECK(open_error(safetensors_file(dir / "meta.safetensors", R"({"__metadata__":{"format":1}})", 0))
            .find("__metadata__ value of \"format\" is not a string") != std::string::npos);
  // Header length beyond the 100 MB bound: refused before reading (the file is only 16 bytes).
  const auto huge = dir / "huge.safetensors";
  {
    std::ofstream out(huge, std::ios::binary);
    const std::uint64_t len = 100'000'001;
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << "{}      ";
  }
  CHECK(open_error(huge).find("header length 100000001 exceeds the 100000000-byte limit") != std::string::npos);
  CHECK(open_error(dir).find("not a regular file") != std::string::npos);
}

TEST_CASE("safetensors: NaN and infinite weights are refused by name unless allowed") {
  const auto dir = darkbert::test::scratch_dir("limits_nan");
  const float values[3] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  std::map<std::string, darkbert::TensorBytes> tensors;
  tensors["w"] = darkbert::tensor_bytes(values, {3});
  const float inf[1] = {-std::numeric_limits<float>::infinity()};
  tensors["v"] = darkbert::tensor_bytes(inf, {1});
  darkbert::write_safetensors(dir / "nan.safetensors", tensors);
  darkbert::SafetensorsFile file(dir / "nan.safetensors");
  std::vector<double> out(3);
  CHECK(message_of([&] { file.read_as<double>("w", out.data()); })
            .find("nan.safetensors: tensor 'w' [3] holds NaN at flat index 1") != std::string::npos);
  CHECK(message_of([&] { file.read_as<double>("v", out.data()); }).find("holds an infinite value at flat index 0") !=
        std::string::npos);
  file.read_as<double>("w", out.data(), darkbert::SafetensorsFile::NonFinite::allow);
  CHECK(std::isnan(out[1]));
}

TEST_CASE("sharded index: shard paths must stay inside the folder; duplicate tensors are refused") {
  const auto root = darkbert::test::scratch_dir("limits_shards");
  const auto dir = root / "ckpt";
  const auto golden = darkbert::test::golden_dir() / "models" / "bert_seqcls3_sharded";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(golden))
    if (e.path().extension() == ".safetensors") fs::copy_file(e.path(), dir / e.path().filename());
  fs::copy_file(golden / "model-00001-of-00002.safetensors", root / "outside.safetensors");
  auto index = darkbert::read_json_file(golden / "model.safetensors.index.json");
  const std::string first = index["weight_map"].begin().key();
  auto with_shard = [&](const std::string& shard) {
    auto j = index;
    j["weight_map"][first] = shard;
    std::ofstream(dir / "model.safetensors.index.json") << j.dump();
    return message_of([&] { darkbert::CheckpointFolder ckpt(dir); });
  };
  CHECK(with_shard(index["weight_map"][first].get<std::string>()).empty());  // the real index opens
  CHECK(with_shard("../outside.safetensors").find("leaves the folder through \"..\"") != std::string::npos);
  CHECK(with_shard((root / "outside.safetensors").string()).find("is an absolute path") != std::string::npos);
  CHECK(with_shard("sub/../../outside.safetensors").find("leaves the folder") != std::string::npos);
  CHECK(with_shard("").find("is empty") != std::string::npos);
  CHECK(with_shard("../outside.safetensors").find(dir.string() + "/model.safetensors.index.json: weight_map entry '" +
                                                  first + "'") != std::string::npos);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "a": "model-00002-of-00002.safetensors"}})";
  CHECK(message_of([&] { darkbert::CheckpointFolder ckpt(dir); }).find("duplicate key \"a\"") != std::string::npos);
}

TEST_CASE("config: absurd sizes are refused by name before anything is allocated") {
  const std::string bert = R"({"model_type": "bert", "vocab_size": 99, "hidden_size": 32, "num_attention_heads": 4,
                               "intermediate_size": 37, "max_position_embeddings": 40)";
  CHECK(config_of(bert + "}").num_layers == 12);
  CHECK(config_error(bert + R"(, "num_hidden_layers": 1000000000})") ==
        "config.json: number of layers 1000000000 exceeds darkbert's limit of 4096 (corrupt config?)");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 2000000000})") ==
        "config.json: vocab_size 2000000000 exceeds darkbert's limit of 16777216 (corrupt config?)");
  CHECK(config_error(bert + R"(, "num_labels": 1000000000})") == "config.json: num_labels 1000000000 outside [0, 1048576]");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 0})") == "config.json: vocab_size must be positive, got 0");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 99, "hidden_size": 32, "num_attention_heads": 5})") ==
        "config.json: hidden size 32 is not divisible by the 5 attention heads");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 16777216, "hidden_size": 65536, "num_attention_heads": 1,
                         "num_hidden_layers": 4096})")
            .find("parameters, more than darkbert's limit of 34359738368") != std::string::npos);
  CHECK(config_error(R"({"model_type": "roberta", "vocab_size": 99, "pad_token_id": -1})")
            .find("RoBERTa's pad_token_id -1 must index the position table") != std::string::npos);
  CHECK(config_error(R"({"model_type": "gpt2", "vocab_size": 99, "n_embd": 2147483647})")
            .find("hidden size 2147483647 exceeds") != std::string::npos);  // no 4 * n_embd overflow first
}

TEST_CASE("config: JSON numbers are never coerced") {
  const std::string bert = R"({"model_type": "bert", "vocab_size": 99, "hidden_size": 32, "num_attention_heads": 4, )";
  CHECK(config_error(bert + R"("num_hidden_layers": true})") ==
        "config.json: field \"num_hidden_layers\" must be an integer, got true");
  CHECK(config_error(bert + R"("num_hidden_layers": 2.9})") ==
        "config.json: field \"num_hidden_layers\" must be an integer, got 2.9");
  CHECK(config_error(bert + R"("num_hidden_layers": 2.0})") ==
        "config.json: field \"num_hidden_layers\" must be an integer, got 2.0");
  CHECK(config_error(bert + R"("num_attention_heads": 4294967298})") ==
        "config.json: duplicate key \"num_attention_heads\" in one JSON object");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 99, "num_attention_heads": 4294967298})") ==
        "config.json: field \"num_attention_heads\" = 4294967298 is out of range (at most 2147483647)");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": "99"})") ==
        "config.json: field \"vocab_size\" must be an integer, got \"99\"");
  CHECK(config_error(R"({"model_type": "gpt2", "vocab_size": 99, "scale_attn_weights": 1})") ==
        "config.json: field \"scale_attn_weights\" must be true or false, got 1");
  CHECK(config_error(R"({"model_type": "bert", "vocab_size": 99, "id2label": {"0": "a", "+1": "b"}})") ==
        "config.json: id2label key \"+1\" is not a label id");
}

TEST_CASE("config vs checkpoint: a config asking for more parameters than the folder stores is refused") {
  const auto dir = darkbert::test::golden_dir() / "models" / "bert_model";
  const darkbert::CheckpointFolder ckpt(dir);
  auto config = darkbert::ModelConfig::from_json_file(dir / "config.json");
  config.require_fits(ckpt, "config.json");  // the real pair fits
  config.num_layers = 3000;
  CHECK(message_of([&] { config.require_fits(ckpt, "config.json"); })
            .find("config.json does not match the weights") != std::string::npos);
}

TEST_CASE("Batch::validate: empty batches, empty sequences and rows without tokens are refused") {
  darkbert::Batch empty;
  CHECK(message_of([&] { empty.validate(); }) == "batch: no sequences (batch size 0); give at least one input row");
  const auto zero_length = darkbert::Batch::from_rows({{}, {}});
  CHECK(message_of([&] { zero_length.validate(); }) == "batch: sequences of length 0; every row needs at least one token");
  const auto padded = darkbert::Batch::from_rows({{5, 6}, {}});
  CHECK(message_of([&] { padded.validate(); }) == "batch: row 1 has no real token (attention_mask is all 0)");
  CHECK(message_of([] { darkbert::Batch::from_rows({{5}}).validate(); }).empty());
}

TEST_CASE("cases files: input ids must be true integers in int range; output names must be plain") {
  const auto root = darkbert::test::scratch_dir("limits_cases");
  auto read = [&](const std::string& cases) {
    darkbert::test::write_file(root / "cases" / "c.json",
                               R"({"format": "darkbert-golden-cases/1", "model": "models/x", "cases": )" + cases + "}");
    return message_of([&] { darkbert::CaseFile::read(root / "cases" / "c.json"); });
  };
  CHECK(read(R"([{"name": "ok", "input_ids": [[1, 2]]}])").empty());
  CHECK(read(R"([{"name": "f", "input_ids": [[1, 63.9]]}])").find("case 0 (f): input_ids[0][1] must be an integer, got 63.9") !=
        std::string::npos);
  CHECK(read(R"([{"name": "w", "input_ids": [[4294967359]]}])").find("input_ids[0][0] = 4294967359 is out of range") !=
        std::string::npos);
  CHECK(read(R"([{"name": "b", "input_ids": [[true]]}])").find("must be an integer, got true") != std::string::npos);
  CHECK(read(R"([{"input_ids": [[1]], "disable": [{"layer": 0.5, "head": 1}]}])").find("disable[0].layer must be an integer") !=
        std::string::npos);
  CHECK(read(R"([{"input_ids": [[1]], "outputs": {"a": "expected/.."}}])").find("has no file name") != std::string::npos);
  CHECK(read(R"([{"input_ids": [[1]], "outputs": {"a": "x/o.npy", "b": "y/o.npy"}}])").find("same file name") !=
        std::string::npos);
  CHECK(read(R"([{"name": 5, "input_ids": [[1]]}])").find("\"name\" must be a string") != std::string::npos);
  CHECK(read(R"("x")").find("no \"cases\" array") != std::string::npos);
}

TEST_CASE("vocabularies: duplicate and empty entries are refused") {
  const auto dir = darkbert::test::scratch_dir("limits_vocab");
  std::string wordpiece = "[UNK]\n[CLS]\na\nb\na\n";
  darkbert::test::write_file(dir / "wp" / "vocab.txt", wordpiece);
  CHECK(message_of([&] { darkbert::Tokenizer::from_directory(dir / "wp"); })
            .find("vocab.txt:5: duplicate token 'a' (first on line 3)") != std::string::npos);
  darkbert::test::write_file(dir / "wp" / "vocab.txt", "[UNK]\n\nb\n");
  CHECK(message_of([&] { darkbert::Tokenizer::from_directory(dir / "wp"); }).find("vocab.txt:2: empty token") !=
        std::string::npos);
  const auto merges = darkbert::test::write_file(dir / "merges.txt", "#version: 0.2\na b\n");
  const auto dup = darkbert::test::write_file(dir / "dup.json", R"({"a": 0, "a": 1, "<|endoftext|>": 2})");
  CHECK(message_of([&] { darkbert::BpeTokenizer t(dup, merges); }).find("dup.json: duplicate key \"a\"") !=
        std::string::npos);
  const auto empty = darkbert::test::write_file(dir / "empty.json", R"({"": 0, "<|endoftext|>": 1})");
  CHECK(message_of([&] { darkbert::BpeTokenizer t(empty, merges); })
            .find("empty.json: entry with id 0 is the empty string") != std::string::npos);
}

TEST_CASE("byte-level BPE on a 1 MB word: linear-time merge, same tokens as the reference algorithm") {
  const auto vocab = darkbert::test::data_dir() / "vocab" / "gpt2";
  const darkbert::BpeTokenizer gpt2(vocab / "vocab.json", vocab / "merges.txt");
  using Access = darkbert::detail::BpeTestAccess;
  // Differential check of the two merge algorithms on words that exercise repeated pairs.
  for (std::string word : {std::string("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                           std::string("internationalizationinternationalizationinternationalization"),
                           std::string(300, 'e') + "xyz" + std::string(77, 'l'), std::string("abababababababababababab")}) {
    auto a = Access::symbols(gpt2, word), b = a;
    Access::merge_short(gpt2, a);
    Access::merge_long(gpt2, b);
    CHECK(a == b);
  }
  // Fuzz finding (tokenizer_text, empty input): merge_long read symbol 0 of an empty sequence.
  for (std::string tiny : {std::string(), std::string("a")}) {
    auto a = Access::symbols(gpt2, tiny), b = a;
    Access::merge_short(gpt2, a);
    Access::merge_long(gpt2, b);
    CHECK(a == b);
  }
  std::string word;
  for (int i = 0; i < 1'000'000 / 8; ++i) word += "abcdefgh";
  const auto start = std::chrono::steady_clock::now();
  std::vector<darkbert::TokenPiece> pieces;
  gpt2.tokenize(word, pieces);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("1 MB word: ", pieces.size(), " tokens in ", seconds, " s");
  CHECK(seconds < 30);  // minutes before (quadratic); about a second now, even under the sanitizers
  CHECK(pieces.back().span.end == word.size());
}

TEST_CASE(".npy reader: headers are validated before allocating") {
  auto header = [](const std::string& dict, std::size_t data) {
    std::string h("\x93NUMPY\x01\x00", 8);
    std::string d = dict;
    while ((10 + d.size() + 1) % 64 != 0) d += ' ';
    d += '\n';
    h.push_back(static_cast<char>(d.size() & 0xff));
    h.push_back(static_cast<char>(d.size() >> 8));
    return h + d + std::string(data, '\0');
  };
  auto error = [](const std::string& bytes) {
    return message_of([&] { darkbert::read_npy_bytes<double>(bytes, "x.npy"); });
  };
  CHECK(error(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48)).empty());
  CHECK(error(header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }", 96)) ==
        "x.npy: .npy shape (1000000, 1000000) needs 8000000000000 bytes of <f8, the file has 96");
  CHECK(error(header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 8))
            .find("overflows 64 bits") != std::string::npos);
  // fuzz_npy's reproducer (npy-crash-ef5041ff…): an empty array (one dimension 0) whose other dimensions
  // overflow its strides; xtensor would multiply them with signed overflow.
  CHECK(error(header("{'descr': '<f8', 'fortran_order': False, 'shape':(0, 5427564479370, 55, 21844674479370, "
                     "550218446744793, 5056, 2), }", 0))
            .find("overflows 64 bits") != std::string::npos);
  CHECK(error(header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }", 0)).empty());
  CHECK(error(header("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", 8)).find("'>f8' is not supported") !=
        std::string::npos);
  CHECK(error(header("{'descr': '<f8', 'fortran_order': True, 'shape': (1,), }", 8)).find("Fortran-order") !=
        std::string::npos);
  CHECK(error(std::string("\x93NUMPY\x01\x00\xff\xff{", 11)).find("runs beyond the end of the file") != std::string::npos);
  CHECK(error("PK\x03\x04").find("not a .npy file") != std::string::npos);
  const auto dir = darkbert::test::scratch_dir("limits_npy");
  xt::xarray<float> a = {{1.5f, -2.0f}, {std::numeric_limits<float>::infinity(), 0.25f}};
  darkbert::write_npy(dir / "a.npy", a);
  CHECK(darkbert::read_npy<float>(dir / "a.npy") == a);
}
