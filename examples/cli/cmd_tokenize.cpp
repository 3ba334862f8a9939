// darkbert tokenize --tokenizer DIR --input FILE.jsonl --output FILE.jsonl [--cased] [--flavour hf|google]
//                   [--max-chars-per-word N] [--max-length N --truncation T --padding P]
//
// Reads JSON lines and writes each one back with every original field kept, plus:
//   {"text": ...}                 -> "tokens", "ids": the tokens without special tokens (the golden format);
//   {"text_a": ..., "text_b": ...} -> a pair encoding with special tokens: "tokens", "input_ids",
//                                    "token_type_ids", "attention_mask", "truncated". The line's own
//                                    "max_length" / "truncation" / "padding" fields (as in the golden pairs
//                                    file) override --max-length / --truncation / --padding.
// DIR holds vocab.txt (WordPiece) or vocab.json + merges.txt (GPT-2 BPE). WordPiece is uncased unless
// --cased (or DIR/tokenizer_config.json says do_lower_case false); --flavour picks HF BertTokenizer (default)
// or Google's tokenization.py. Errors name the input file and line.
//
//   darkbert tokenize --tokenizer data/vocab/bert-base-uncased --input in.jsonl --output out.jsonl

#include <CLI/CLI.hpp>

#include <chrono>        // std::chrono::steady_clock
#include <cstddef>       // std::size_t
#include <cstdio>        // std::printf, std::fprintf
#include <filesystem>    // std::filesystem::path, create_directories
#include <fstream>       // std::ifstream
#include <memory>        // std::make_shared
#include <optional>      // std::optional
#include <string>        // std::string, std::getline

#include <nlohmann/json.hpp>  // the JSON lines (ordered_json keeps the field order)

#include "commands.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/tokenizer/tokenizer.hpp"

namespace darkbert::cli {

struct TokenizeOptions {
  std::string tokenizer, input, output;
  bool cased = false;
  std::string flavour;                 // "" = default (tokenizer_config.json / hf)
  std::size_t max_chars_per_word = 0;  // 0 = flavour default
  std::size_t max_length = 0;          // pair lines
  std::string truncation = "longest_first";
  std::string padding = "none";
};

namespace detail {

inline Truncation truncation_from(const std::string& name, const std::string& where) {
  if (name == "longest_first") return Truncation::longest_first;
  if (name == "only_first") return Truncation::only_first;
  if (name == "only_second") return Truncation::only_second;
  if (name == "none" || name == "do_not_truncate") return Truncation::none;
  fail(where, "unknown truncation '", name, "' (longest_first, only_first, only_second, none)");
}

inline Padding padding_from(const std::string& name, const std::string& where) {
  if (name == "max_length") return Padding::max_length;
  if (name == "none" || name == "do_not_pad") return Padding::none;
  fail(where, "unknown padding '", name, "' (max_length, none)");
}

// The pair encoding fields of one line.
inline void encode_pair_line(const Tokenizer& tok, nlohmann::ordered_json& j, const TokenizeOptions& o,
                             const std::string& where) {
  for (const char* key : {"text_a", "text_b"})
    require(j[key].is_string(), where, "\"", key, "\" must be a string");
  EncodeOptions eo;
  eo.max_length = o.max_length;
  eo.truncation = truncation_from(o.truncation, where);
  eo.padding = padding_from(o.padding, where);
  if (j.contains("max_length")) {
    require(j["max_length"].is_number_unsigned(), where, "\"max_length\" must be a non-negative integer");
    eo.max_length = j["max_length"].get<std::size_t>();
  }
  if (j.contains("truncation")) {
    require(j["truncation"].is_string(), where, "\"truncation\" must be a string");
    eo.truncation = truncation_from(j["truncation"].get<std::string>(), where);
  }
  if (j.contains("padding")) {
    require(j["padding"].is_string(), where, "\"padding\" must be a string");
    eo.padding = padding_from(j["padding"].get<std::string>(), where);
  }
  const Encoding e = tok.encode_pair(j["text_a"].get<std::string>(), j["text_b"].get<std::string>(), eo);
  j["tokens"] = e.tokens;
  j["input_ids"] = e.ids;
  j["token_type_ids"] = e.token_type_ids;
  j["attention_mask"] = e.attention_mask;
  j["truncated"] = e.truncated;
}

}  // namespace detail

inline void run_tokenize(const TokenizeOptions& o) {
  TokenizerOptions to;
  if (o.cased) to.lowercase = false;
  if (!o.flavour.empty()) to.flavour = o.flavour == "google" ? BertFlavour::google : BertFlavour::hf;
  to.max_chars_per_word = o.max_chars_per_word;
  const Tokenizer tok = Tokenizer::from_directory(o.tokenizer, to);

  std::ifstream in(o.input, std::ios::binary);
  if (!in) fail("cannot open input file '", o.input, "'");
  const std::filesystem::path out_path(o.output);
  if (out_path.has_parent_path()) std::filesystem::create_directories(out_path.parent_path());
  AtomicFileWriter out(out_path);  // the output appears only once complete (core/atomic_file.hpp)

  const auto start = std::chrono::steady_clock::now();
  std::size_t line_no = 0, tokens = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = o.input + ":" + std::to_string(line_no) + ": ";
    if (!line.empty() && line.back() == '\r') line.pop_back();
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      std::string what = e.what();
      const auto close = what.find("] ");
      if (close != std::string::npos) what = what.substr(close + 2);
      fail(where, what);
    }
    require(j.is_object(), where, "expected a JSON object, got ", j.type_name());
    try {
      if (j.contains("text")) {
        require(j["text"].is_string(), where, "\"text\" must be a string");
        const Encoding e = tok.encode(j["text"].get<std::string>(), {.add_special_tokens = false});
        j["tokens"] = e.tokens;
        j["ids"] = e.ids;
        tokens += e.size();
      } else if (j.contains("text_a") && j.contains("text_b")) {
        detail::encode_pair_line(tok, j, o, where);
        tokens += j["input_ids"].size();
      } else {
        fail(where, "expected a \"text\" field (or \"text_a\" and \"text_b\")");
      }
    } catch (const error& e) {
      const std::string what = e.what();
      if (what.rfind(where, 0) == 0) throw;
      fail(where, what);
    }
    out.write(j.dump() + '\n');
    if (line_no % 100000 == 0) std::fprintf(stderr, "tokenize: %zu lines\n", line_no);
  }
  if (in.bad()) fail("error while reading '", o.input, "'");
  out.commit();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("tokenized %zu lines (%zu tokens) in %.3f s -> %s\n", line_no, tokens, seconds, o.output.c_str());
}

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Tokenize JSON lines ({\"text\"} or {\"text_a\", \"text_b\"})");
  cmd->footer("Example: darkbert tokenize --tokenizer bert-base-uncased/ --input sentences.jsonl --output tokens.jsonl");
  auto o = std::make_shared<TokenizeOptions>();
  cmd->add_option("--tokenizer", o->tokenizer, "Folder with vocab.txt, or vocab.json + merges.txt")->required();
  cmd->add_option("--input", o->input, "Input JSON lines")->required();
  cmd->add_option("--output", o->output, "Output JSON lines (input fields + tokens, ids)")->required();
  cmd->add_flag("--cased", o->cased, "WordPiece: do not lower-case or strip accents");
  cmd->add_option("--flavour", o->flavour, "WordPiece: hf (BertTokenizer) or google (tokenization.py)")
      ->check(CLI::IsMember({"hf", "google"}));
  cmd->add_option("--max-chars-per-word", o->max_chars_per_word,
                  "WordPiece: longer words become [UNK] (default: hf 100, google 200)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-length", o->max_length, "Pair lines: maximum length incl. special tokens (0 = none)")
      ->capture_default_str();
  cmd->add_option("--truncation", o->truncation, "Pair lines: longest_first, only_first, only_second or none")
      ->check(CLI::IsMember({"longest_first", "only_first", "only_second", "none"}))
      ->capture_default_str();
  cmd->add_option("--padding", o->padding, "Pair lines: none or max_length")
      ->check(CLI::IsMember({"none", "max_length"}))
      ->capture_default_str();
  cmd->callback([o] { run_tokenize(*o); });
}

}  // namespace darkbert::cli
