// The Tokenizer facade (tokenizer/tokenizer.hpp): every line of every golden tokenization file (tokens AND
// ids; the pairs file with token types, attention mask and truncation), offsets / word_ids invariants on
// all golden texts, hand-written alignment cases, truncation and padding modes, encode_words, batches,
// and the folder-loading error paths.
#include <doctest/doctest.h>

#include <algorithm>   // std::all_of
#include <cctype>      // std::tolower
#include <filesystem>  // std::filesystem::path, directory_iterator, copy_file
#include <fstream>     // std::ifstream, std::ofstream
#include <map>         // std::map
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/tokenizer/tokenizer.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using darkbert::BertFlavour;
using darkbert::EncodeOptions;
using darkbert::Encoding;
using darkbert::Padding;
using darkbert::Span;
using darkbert::Tokenizer;
using darkbert::TokenizerKind;
using darkbert::TokenizerOptions;
using darkbert::Truncation;
using Strings = std::vector<std::string>;
using Ints = std::vector<int>;

fs::path vocab_dir(const std::string& name) { return darkbert::test::data_dir() / "vocab" / name; }

const Tokenizer& bert() {
  static const Tokenizer tok = Tokenizer::from_directory(vocab_dir("bert-base-uncased"));
  return tok;
}
const Tokenizer& gpt2() {
  static const Tokenizer tok = Tokenizer::from_directory(vocab_dir("gpt2"));
  return tok;
}

// How a golden file name maps to a tokenizer: "<vocab>.<hf|google>.jsonl", "<vocab>.pairs.jsonl" (HF), or
// "<vocab>.jsonl" for a BPE vocabulary. Lower-casing follows the vocabulary name ("uncased").
struct GoldenSetup {
  std::string vocab;
  TokenizerOptions options;
  bool pairs = false;
};

GoldenSetup setup_for(const fs::path& file) {
  const std::string stem = file.stem().string();  // e.g. "bert-base-uncased.hf"
  GoldenSetup s;
  const auto dot = stem.find('.');
  s.vocab = stem.substr(0, dot);
  const std::string mode = dot == std::string::npos ? "" : stem.substr(dot + 1);
  REQUIRE_MESSAGE(fs::is_directory(vocab_dir(s.vocab)), "no vocabulary folder for golden file ", file.string());
  if (fs::exists(vocab_dir(s.vocab) / "vocab.txt")) {
    REQUIRE_MESSAGE((mode == "hf" || mode == "google" || mode == "pairs"), "no flavour mapping for ", file.string());
    s.options.lowercase = s.vocab.find("uncased") != std::string::npos;
    s.options.flavour = mode == "google" ? BertFlavour::google : BertFlavour::hf;
    s.pairs = mode == "pairs";
  } else {
    REQUIRE_MESSAGE(mode.empty(), "no flavour mapping for ", file.string());
  }
  return s;
}

Truncation truncation_named(const std::string& name) {
  if (name == "longest_first") return Truncation::longest_first;
  if (name == "only_first") return Truncation::only_first;
  if (name == "only_second") return Truncation::only_second;
  REQUIRE_MESSAGE(name == "none", "unknown truncation ", name);
  return Truncation::none;
}

Padding padding_named(const std::string& name) {
  if (name == "max_length") return Padding::max_length;
  if (name == "longest") return Padding::longest;
  REQUIRE_MESSAGE(name == "none", "unknown padding ", name);
  return Padding::none;
}

std::string lower_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_bert_special(const std::string& token) {
  return token == "[UNK]" || token == "[SEP]" || token == "[PAD]" || token == "[CLS]" || token == "[MASK]";
}

// Alignment invariants of an encoding of `text` without special tokens.
void check_alignment(const Tokenizer& tok, const std::string& text, const Encoding& e, bool lowercase, int line) {
  CAPTURE(line);
  std::size_t covered = 0;  // GPT-2: byte-level tokens tile the text exactly
  int last_word = -1;
  std::size_t last_begin = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const Span s = e.offsets[i];
    REQUIRE(s.begin < s.end);
    REQUIRE(s.end <= text.size());
    CHECK(s.begin >= last_begin);
    last_begin = s.begin;
    CHECK(e.word_ids[i] >= 0);
    CHECK((e.word_ids[i] == last_word || e.word_ids[i] == last_word + 1));  // words numbered in order
    last_word = e.word_ids[i];
    CHECK(e.sequence_ids[i] == 0);
    const std::string slice = text.substr(s.begin, s.end - s.begin);
    if (tok.kind() == TokenizerKind::bpe) {
      CHECK(s.begin == covered);
      covered = s.end;
    } else if (!is_bert_special(e.tokens[i]) && std::all_of(slice.begin(), slice.end(), [](char c) {
                 return static_cast<unsigned char>(c) >= 33 && static_cast<unsigned char>(c) < 127;
               })) {
      // a piece from printable ASCII text spells its source (lower-cased when uncased)
      std::string piece = e.tokens[i].rfind("##", 0) == 0 ? e.tokens[i].substr(2) : e.tokens[i];
      CHECK(piece == (lowercase ? lower_ascii(slice) : slice));
    }
  }
  if (tok.kind() == TokenizerKind::bpe) CHECK(covered == text.size());
}

}  // namespace

TEST_CASE("every line of every golden tokenization file: tokens and ids match exactly") {
  const fs::path dir = darkbert::test::golden_dir() / "tokenization";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    ++files;
    const fs::path file = entry.path();
    CAPTURE(file.string());
    const GoldenSetup setup = setup_for(file);
    const Tokenizer tok = Tokenizer::from_directory(vocab_dir(setup.vocab), setup.options);
    std::ifstream in(file);
    REQUIRE(in);
    std::string line;
    int lines = 0, matched = 0;
    while (std::getline(in, line)) {
      ++lines;
      CAPTURE(lines);
      const auto j = nlohmann::json::parse(line);
      if (setup.pairs) {
        EncodeOptions o;
        o.max_length = j.at("max_length").get<std::size_t>();
        o.truncation = truncation_named(j.at("truncation").get<std::string>());
        o.padding = padding_named(j.at("padding").get<std::string>());
        const Encoding e = tok.encode_pair(j.at("text_a").get<std::string>(), j.at("text_b").get<std::string>(), o);
        const bool ok = e.ids == j.at("input_ids").get<Ints>() &&
                        e.token_type_ids == j.at("token_type_ids").get<Ints>() &&
                        e.attention_mask == j.at("attention_mask").get<Ints>() &&
                        e.truncated == j.at("truncated").get<bool>();
        CHECK_MESSAGE(ok, "pair line ", lines, ": ", line);
        matched += ok;
        continue;
      }
      const auto text = j.at("text").get<std::string>();
      const auto expected_tokens = j.at("tokens").get<Strings>();
      const auto expected_ids = j.at("ids").get<Ints>();
      const Encoding e = tok.encode(text, {.add_special_tokens = false});
      const bool ok = e.tokens == expected_tokens && e.ids == expected_ids;
      CHECK_MESSAGE(e.tokens == expected_tokens, "line ", lines, ": ", text);
      CHECK_MESSAGE(e.ids == expected_ids, "line ", lines, ": ", text);
      CHECK(tok.tokenize(text) == expected_tokens);
      CHECK(tok.token_ids(text) == expected_ids);
      check_alignment(tok, text, e, setup.options.lowercase.value_or(false), lines);
      matched += ok;
    }
    MESSAGE(file.filename().string(), ": ", matched, " of ", lines, " lines match");
    CHECK(lines > 0);
    CHECK(matched == lines);
  }
  CHECK(files >= 5);
}

TEST_CASE("BERT single sequence: special tokens, word_ids and offsets of accented multi-piece words") {
  const Encoding e = bert().encode("Café au lait!");
  CHECK(e.tokens == Strings{"[CLS]", "cafe", "au", "lai", "##t", "!", "[SEP]"});
  CHECK(e.ids == Ints{101, 7668, 8740, 21110, 2102, 999, 102});
  CHECK(e.word_ids == Ints{-1, 0, 1, 2, 2, 3, -1});
  CHECK(e.sequence_ids == Ints{-1, 0, 0, 0, 0, 0, -1});
  CHECK(e.token_type_ids == Ints{0, 0, 0, 0, 0, 0, 0});
  CHECK(e.attention_mask == Ints{1, 1, 1, 1, 1, 1, 1});
  CHECK(e.offsets == std::vector<Span>{{0, 0}, {0, 5}, {6, 8}, {9, 12}, {12, 13}, {13, 14}, {0, 0}});
  CHECK_FALSE(e.truncated);

  const Encoding cjk = bert().encode("你好，世界！", {.add_special_tokens = false});
  CHECK(cjk.word_ids == Ints{0, 1, 2, 3, 4, 5});
  CHECK(cjk.offsets == std::vector<Span>{{0, 3}, {3, 6}, {6, 9}, {9, 12}, {12, 15}, {15, 18}});
}

TEST_CASE("BERT pair with padding: the documented example") {
  const Encoding e =
      bert().encode_pair("The cat sat.", "It was tired.", {.max_length = 16, .padding = Padding::max_length});
  CHECK(e.tokens == Strings{"[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "was", "tired", ".", "[SEP]", "[PAD]",
                            "[PAD]", "[PAD]", "[PAD]", "[PAD]"});
  CHECK(e.token_type_ids == Ints{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0});
  CHECK(e.attention_mask == Ints{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0});
  CHECK(e.sequence_ids == Ints{-1, 0, 0, 0, 0, -1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1});
  CHECK(e.word_ids == Ints{-1, 0, 1, 2, 3, -1, 0, 1, 2, 3, -1, -1, -1, -1, -1, -1});
  CHECK(e.offsets[2] == Span{4, 7});
  CHECK(e.offsets[8] == Span{7, 12});
  CHECK(e.offsets[9] == Span{12, 13});
  CHECK(e.offsets[12] == Span{0, 0});
  CHECK(e.ids[11] == 0);
  CHECK(e.size() == 16);
}

TEST_CASE("truncation: longest_first (ties from b), only_first, only_second, single sequence") {
  auto tokens = [](const Encoding& e) { return e.tokens; };
  EncodeOptions o{.max_length = 8};
  Encoding e = bert().encode_pair("a b c d e", "x y", o);
  CHECK(tokens(e) == Strings{"[CLS]", "a", "b", "c", "[SEP]", "x", "y", "[SEP]"});
  CHECK(e.truncated);
  e = bert().encode_pair("a b c", "x y z", {.max_length = 7});  // tie: b loses first, then a
  CHECK(tokens(e) == Strings{"[CLS]", "a", "b", "[SEP]", "x", "y", "[SEP]"});
  e = bert().encode_pair("a b c d e", "x y", {.max_length = 8, .truncation = Truncation::only_first});
  CHECK(tokens(e) == Strings{"[CLS]", "a", "b", "c", "[SEP]", "x", "y", "[SEP]"});
  e = bert().encode_pair("a b", "v w x y z", {.max_length = 8, .truncation = Truncation::only_second});
  CHECK(tokens(e) == Strings{"[CLS]", "a", "b", "[SEP]", "v", "w", "x", "[SEP]"});
  e = bert().encode("a b c d e", {.max_length = 5});
  CHECK(tokens(e) == Strings{"[CLS]", "a", "b", "c", "[SEP]"});
  CHECK(e.truncated);
  e = bert().encode("a b c", {.max_length = 5});
  CHECK_FALSE(e.truncated);
  // longest_first may empty one side of a pair completely (as HF): ties cut b, then the longer one
  e = bert().encode_pair("a", "v w x y z", {.max_length = 4});
  CHECK(tokens(e) == Strings{"[CLS]", "a", "[SEP]", "[SEP]"});
  e = bert().encode_pair("a b", "v", {.max_length = 3});
  CHECK(tokens(e) == Strings{"[CLS]", "[SEP]", "[SEP]"});
  // no limit: nothing is cut
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "b ";
  CHECK(bert().encode(many).size() == 1002);
  // GPT-2: no special tokens, so max_length is all tokens
  e = gpt2().encode("Hello world, how are you?", {.max_length = 3});
  CHECK(tokens(e) == Strings{"Hello", "Ġworld", ","});
}

TEST_CASE("GPT-2 with end_of_text_boundaries: <|endoftext|> a (<|endoftext|> b), the replication's inputs") {
  const EncodeOptions boundaries{.end_of_text_boundaries = true};
  auto tokens = [](const Encoding& e) { return e.tokens; };
  Encoding e = gpt2().encode("Hello world", boundaries);
  CHECK(tokens(e) == Strings{"<|endoftext|>", "Hello", "Ġworld"});
  CHECK(e.ids.front() == 50256);
  CHECK(e.sequence_ids == std::vector<int>{-1, 0, 0});
  CHECK(e.word_ids == std::vector<int>{-1, 0, 1});
  e = gpt2().encode_pair("Hi there", "Hello", boundaries);
  CHECK(tokens(e) == Strings{"<|endoftext|>", "Hi", "Ġthere", "<|endoftext|>", "Hello"});
  CHECK(e.token_type_ids == std::vector<int>{0, 0, 0, 0, 1});  // the separator closes a, as BERT's first [SEP]
  CHECK(e.sequence_ids == std::vector<int>{-1, 0, 0, -1, 1});
  // max_length counts both boundaries; longest-first cuts the longer text
  e = gpt2().encode_pair("one two three four", "five", {.max_length = 5, .end_of_text_boundaries = true});
  CHECK(tokens(e) == Strings{"<|endoftext|>", "one", "Ġtwo", "<|endoftext|>", "five"});
  CHECK(e.truncated);
  // without add_special_tokens, and for BERT, the option changes nothing
  CHECK(tokens(gpt2().encode("Hello", {.add_special_tokens = false, .end_of_text_boundaries = true})) == Strings{"Hello"});
  CHECK(tokens(bert().encode("hello", boundaries)) == Strings{"[CLS]", "hello", "[SEP]"});
}

TEST_CASE("truncation errors") {
  CHECK_THROWS_WITH_AS(bert().encode("a b c d e", {.max_length = 5, .truncation = Truncation::none}),
                       "input of 7 tokens (2 special tokens included) exceeds max_length 5 and truncation is none",
                       darkbert::error);
  CHECK_THROWS_WITH_AS(bert().encode_pair("a", "b", {.max_length = 2}),
                       "max_length 2 is smaller than the 3 special tokens of a pair", darkbert::error);
  CHECK_THROWS_WITH_AS(bert().encode("a b", {.max_length = 2}),
                       "cannot truncate to max_length 2: 2 tokens must go but the sequence has only 2 (it must "
                       "keep at least one)",
                       darkbert::error);
  CHECK_THROWS_WITH_AS(bert().encode_pair("a b", "x y z", {.max_length = 6, .truncation = Truncation::only_first}),
                       "cannot truncate to max_length 6: 2 tokens must go but the first sequence has only 2 (it "
                       "must keep at least one)",
                       darkbert::error);
  CHECK_THROWS_WITH_AS(bert().encode("a b c", {.max_length = 4, .truncation = Truncation::only_second}),
                       "truncation only_second needs a pair of sequences", darkbert::error);
  CHECK_THROWS_WITH_AS(bert().encode("a", {.padding = Padding::max_length}),
                       "padding to max_length needs max_length > 0", darkbert::error);
  // truncation none is fine when it fits
  CHECK(bert().encode("a b c", {.max_length = 5, .truncation = Truncation::none}).size() == 5);
}

TEST_CASE("encode_words: word_ids index the given words, offsets are within each word") {
  const Strings words = {"Héllo", "don't", "CJK世界"};
  const Encoding e = bert().encode_words(words);
  CHECK(e.tokens == Strings{"[CLS]", "hello", "don", "'", "t", "c", "##jk", "世", "[UNK]", "[SEP]"});
  CHECK(e.word_ids == Ints{-1, 0, 1, 1, 1, 2, 2, 2, 2, -1});
  CHECK(e.offsets == std::vector<Span>{{0, 0}, {0, 6}, {0, 3}, {3, 4}, {4, 5}, {0, 1}, {1, 3}, {3, 6}, {6, 9}, {0, 0}});

  const Encoding g = gpt2().encode_words(Strings{"Hello", "world", "!"});  // each word gets a leading space
  CHECK(g.tokens == Strings{"ĠHello", "Ġworld", "Ġ!"});
  CHECK(g.word_ids == Ints{0, 1, 2});
  CHECK(g.offsets == std::vector<Span>{{0, 5}, {0, 5}, {0, 1}});

  const Encoding pair = bert().encode_words_pair(Strings{"a", "b"}, Strings{"c"});
  CHECK(pair.tokens == Strings{"[CLS]", "a", "b", "[SEP]", "c", "[SEP]"});
  CHECK(pair.word_ids == Ints{-1, 0, 1, -1, 0, -1});
  CHECK(pair.sequence_ids == Ints{-1, 0, 0, -1, 1, -1});
}

TEST_CASE("GPT-2: no special tokens; pairs get token types; padding uses <|endoftext|> with mask 0") {
  const Encoding e = gpt2().encode_pair("I'm  ok", "Hi", {.max_length = 8, .padding = Padding::max_length});
  CHECK(e.tokens == Strings{"I", "'m", "Ġ", "Ġok", "Hi", "<|endoftext|>", "<|endoftext|>", "<|endoftext|>"});
  CHECK(e.ids == Ints{40, 1101, 220, 12876, 17250, 50256, 50256, 50256});
  CHECK(e.token_type_ids == Ints{0, 0, 0, 0, 1, 0, 0, 0});
  CHECK(e.attention_mask == Ints{1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(e.word_ids == Ints{0, 1, 2, 3, 0, -1, -1, -1});
  CHECK(e.sequence_ids == Ints{0, 0, 0, 0, 1, -1, -1, -1});
  CHECK(e.offsets[3] == Span{4, 7});
  CHECK(gpt2().pad_id() == 50256);
  const auto sp = gpt2().special_tokens();
  CHECK(sp.eos == 50256);
  CHECK_FALSE(sp.cls.has_value());
}

TEST_CASE("batches pad to the longest (or to max_length)") {
  const Strings texts = {"short", "a somewhat longer sentence here", ""};
  const auto batch = bert().encode_batch(texts, {.padding = Padding::longest});
  REQUIRE(batch.size() == 3);
  const std::size_t longest = bert().encode(texts[1]).size();
  for (const auto& e : batch) {
    CHECK(e.size() == longest);
    CHECK(e.attention_mask.size() == longest);
    CHECK(e.offsets.size() == longest);
  }
  CHECK(longest == 7);
  CHECK(batch[0].ids == Ints{101, 2460, 102, 0, 0, 0, 0});
  CHECK(batch[0].attention_mask == Ints{1, 1, 1, 0, 0, 0, 0});
  CHECK(batch[0].word_ids == Ints{-1, 0, -1, -1, -1, -1, -1});
  CHECK(batch[2].tokens == Strings{"[CLS]", "[SEP]", "[PAD]", "[PAD]", "[PAD]", "[PAD]", "[PAD]"});
  const auto unpadded = bert().encode_batch(texts);
  CHECK(unpadded[0].size() == 3);
  const auto fixed = gpt2().encode_batch(texts, {.max_length = 4, .padding = Padding::max_length});
  for (const auto& e : fixed) CHECK(e.size() == 4);
  CHECK(fixed[2].attention_mask == Ints{0, 0, 0, 0});
  const std::vector<std::pair<std::string, std::string>> pairs = {{"a", "b"}, {"a b c", "d e"}};
  const auto pb = bert().encode_pair_batch(pairs, {.padding = Padding::longest});
  CHECK(pb[0].size() == 8);
  CHECK(pb[0].token_type_ids == Ints{0, 0, 0, 1, 1, 0, 0, 0});
  CHECK(pb[1].size() == 8);
}

TEST_CASE("vocabulary access and special tokens through the facade") {
  CHECK(bert().kind() == TokenizerKind::wordpiece);
  CHECK(gpt2().kind() == TokenizerKind::bpe);
  CHECK(bert().vocab_size() == 30522);
  CHECK(gpt2().vocab_size() == 50257);
  CHECK(bert().token_to_id("[MASK]") == 103);
  CHECK(bert().id_to_token(2088) == "world");
  CHECK(gpt2().token_to_id("Ġworld") == 995);
  CHECK(gpt2().token_to_id("not a token") == 50256);
  CHECK(gpt2().id_to_token(995) == "Ġworld");
  const auto sp = bert().special_tokens();
  CHECK(sp.cls == 101);
  CHECK(sp.sep == 102);
  CHECK(sp.pad == 0);
  CHECK(sp.mask == 103);
  CHECK(sp.unk == 100);
  CHECK(bert().pad_id() == 0);
  CHECK(bert().find("hello") == 7592);
}

TEST_CASE("invalid UTF-8 reaches the caller with the byte offset") {
  CHECK_THROWS_WITH_AS(bert().encode("ok \xFF"), "invalid UTF-8 at byte 3: byte that never occurs in UTF-8: 0xFF",
                       darkbert::error);
  CHECK_THROWS_WITH_AS(gpt2().encode_pair("fine", "x\x80"), "invalid UTF-8 at byte 1: unexpected continuation byte 0x80",
                       darkbert::error);
}

TEST_CASE("from_directory: picks the model, reads tokenizer_config.json, names missing or malformed files") {
  const auto dir = darkbert::test::scratch_dir("tokenizer_dirs");
  auto error_of = [](const fs::path& d, const TokenizerOptions& o = {}) {
    return darkbert::test::message_of([&] { Tokenizer::from_directory(d, o); });
  };
  CHECK(error_of(dir / "absent") ==
        "tokenizer directory '" + (dir / "absent").string() + "' does not exist or is not a directory");
  fs::create_directories(dir / "empty");
  CHECK(error_of(dir / "empty") == "no tokenizer files in '" + (dir / "empty").string() +
                                       "': expected vocab.txt (WordPiece) or vocab.json + merges.txt (byte-level BPE)");
  fs::create_directories(dir / "half");
  fs::copy_file(vocab_dir("gpt2") / "merges.txt", dir / "half" / "merges.txt");
  CHECK(error_of(dir / "half") == "missing '" + (dir / "half" / "vocab.json").string() +
                                      "' (byte-level BPE needs vocab.json next to merges.txt)");
  fs::copy_file(vocab_dir("bert-base-uncased") / "vocab.txt", dir / "half" / "vocab.txt");
  CHECK(error_of(dir / "half") == "tokenizer directory '" + (dir / "half").string() +
                                      "' holds both vocab.txt (WordPiece) and merges.txt (BPE); keep the files of one "
                                      "tokenizer only");
  TokenizerOptions cased;
  cased.lowercase = false;
  CHECK(error_of(vocab_dir("gpt2"), cased) ==
        "tokenizer directory '" + vocab_dir("gpt2").string() +
            "' holds a byte-level BPE tokenizer: lowercase / strip_accents / flavour / max_chars_per_word only apply "
            "to WordPiece");

  // tokenizer_config.json decides lower-casing when the options leave it open
  fs::create_directories(dir / "cased");
  fs::copy_file(vocab_dir("bert-base-cased") / "vocab.txt", dir / "cased" / "vocab.txt");
  std::ofstream(dir / "cased" / "tokenizer_config.json") << R"({"do_lower_case": false, "model_max_length": 512})";
  CHECK(Tokenizer::from_directory(dir / "cased").tokenize("Café") == Strings{"Café"});
  TokenizerOptions lower;
  lower.lowercase = true;
  CHECK(Tokenizer::from_directory(dir / "cased", lower).tokenize("Café") == Strings{"cafe"});
  CHECK(Tokenizer::from_directory(vocab_dir("bert-base-cased")).tokenize("Café") == Strings{"cafe"});  // HF default
  std::ofstream(dir / "cased" / "tokenizer_config.json") << R"({"do_lower_case": "no"})";
  CHECK(error_of(dir / "cased") ==
        (dir / "cased" / "tokenizer_config.json").string() + ": \"do_lower_case\" must be true, false or null");
  std::ofstream(dir / "cased" / "tokenizer_config.json") << R"({"do_lower_case": fals})";
  CHECK(error_of(dir / "cased").rfind((dir / "cased" / "tokenizer_config.json").string() + ": ", 0) == 0);
  CHECK(error_of(dir / "cased").find("parse error at line 1") != std::string::npos);
}
