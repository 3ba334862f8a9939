// Byte-level BPE (tokenizer/bpe.hpp): the hand-written pre-tokenizer against Python `regex` results,
// bytes_to_unicode, merge order, byte offsets, the prefix space of pre-split words, decoding, and every
// vocab.json / merges.txt error path. (Every golden line is checked in test_tokenizer_tokenizer.cpp.)
#include <doctest/doctest.h>

#include <filesystem>     // std::filesystem::path
#include <fstream>        // std::ifstream
#include <set>            // std::set
#include <string>         // std::string
#include <vector>         // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/tokenizer/bpe.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using darkbert::BpeTokenizer;
using darkbert::Span;
using darkbert::TokenPiece;
using darkbert::test::write_file;
using Strings = std::vector<std::string>;

fs::path gpt2_dir() { return darkbert::test::data_dir() / "vocab" / "gpt2"; }

const BpeTokenizer& bpe_gpt2() {
  static const BpeTokenizer tok(gpt2_dir() / "vocab.json", gpt2_dir() / "merges.txt");
  return tok;
}

Strings chunks(const std::string& text) {
  Strings out;
  for (const Span& s : bpe_gpt2().pre_tokenize(text)) out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

// A vocab.json with the 256 byte symbols (ids 0..255), then `extra` tokens, then <|endoftext|>.
std::string byte_vocab(const Strings& extra) {
  nlohmann::ordered_json j;
  const auto b2u = darkbert::detail::bytes_to_unicode();
  int id = 0;
  for (char32_t c : b2u) {
    std::string s;
    darkbert::unicode::append_utf8(s, c);
    j[s] = id++;
  }
  for (const auto& t : extra) j[t] = id++;
  j["<|endoftext|>"] = id;
  return j.dump();
}

std::string bpe_load_error(const fs::path& vocab, const fs::path& merges) {
  return darkbert::test::message_of([&] { BpeTokenizer tok(vocab, merges); });
}

}  // namespace

TEST_CASE("pre-tokenizer chunks equal Python regex findall") {
  // Expected values: regex.findall(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+", s)
  CHECK(chunks("Hello world!") == Strings{"Hello", " world", "!"});
  CHECK(chunks("I'm   here  \n\nnow ") == Strings{"I", "'m", "  ", " here", "  \n", "\n", "now", " "});
  CHECK(chunks("DON'T don't we're 'll x'd") ==
        Strings{"DON", "'", "T", " don", "'t", " we", "'re", " '", "ll", " x", "'d"});
  CHECK(chunks(" \t a") == Strings{" \t", " a"});
  CHECK(chunks("3.14 ١٢٣ ½") == Strings{"3", ".", "14", " ١٢٣", " ½"});
  CHECK(chunks("naïve\u00A0café") == Strings{"naïve", "\u00A0", "café"});
  CHECK(chunks("a\u2028b") == Strings{"a", "\u2028", "b"});
  CHECK(chunks("\U0001123F!") == Strings{"\U0001123F", "!"});  // a letter for the regex module only
  CHECK(chunks("emoji😀inside  ") == Strings{"emoji", "😀", "inside", "  "});
  CHECK(chunks("''quoted''") == Strings{"''", "quoted", "''"});
  CHECK(chunks(" 's") == Strings{" '", "s"});
  CHECK(chunks("").empty());
  CHECK(chunks("   ") == Strings{"   "});
}

TEST_CASE("bytes_to_unicode is GPT-2's reversible byte alphabet") {
  const auto b2u = darkbert::detail::bytes_to_unicode();
  CHECK(b2u[' '] == 0x120);   // Ġ
  CHECK(b2u['\n'] == 0x10A);  // Ċ
  CHECK(b2u['!'] == U'!');
  CHECK(b2u[0xA9] == 0xA9);
  CHECK(b2u[0xAD] == 0x143);  // soft hyphen is not printable: mapped past 0xFF
  CHECK(b2u[0] == 0x100);
  CHECK(std::set<char32_t>(b2u.begin(), b2u.end()).size() == 256);
}

TEST_CASE("GPT-2 tokens, ids and byte offsets") {
  const auto& tok = bpe_gpt2();
  CHECK(tok.vocab_size() == 50257);
  CHECK(tok.merge_count() == 50000);
  CHECK(tok.eos_id() == 50256);
  CHECK(tok.tokenize("Hello world!") == Strings{"Hello", "Ġworld", "!"});
  const std::string text = "naïve  café<|endoftext|> 😀";
  std::vector<TokenPiece> p;
  tok.tokenize(text, p);
  REQUIRE(p.size() == 7);
  const Strings tokens = {"na", "Ã¯ve", "Ġ", "ĠcafÃ©", "<|endoftext|>", "ĠðŁĺ", "Ģ"};
  const std::vector<Span> spans = {{0, 2}, {2, 6}, {6, 7}, {7, 13}, {13, 26}, {26, 30}, {30, 31}};
  const std::vector<int> words = {0, 0, 1, 2, 3, 4, 4};
  for (std::size_t i = 0; i < p.size(); ++i) {
    CAPTURE(i);
    CHECK(std::string(p[i].token) == tokens[i]);
    CHECK(p[i].span == spans[i]);
    CHECK(p[i].word == words[i]);
  }
  CHECK(p[4].id == 50256);
  // a token may end inside a UTF-8 character: the emoji's 4 bytes are split 3 + 1
  CHECK(tok.decode(std::vector<int>{p[5].id, p[6].id}) == " 😀");
  // the cache returns the same as the first computation
  CHECK(tok.tokenize(text) == tok.tokenize(text));
}

TEST_CASE("add_prefix_space (pre-split words) adds Ġ with an empty span") {
  const auto& tok = bpe_gpt2();
  std::vector<TokenPiece> p;
  tok.tokenize("cat", p, true);
  REQUIRE(p.size() == 1);
  CHECK(p[0].token == "Ġcat");
  CHECK(p[0].span == Span{0, 3});
  p.clear();
  tok.tokenize("<|endoftext|>", p, true);
  REQUIRE(p.size() == 2);
  CHECK(p[0].token == "Ġ");
  CHECK(p[0].span == Span{0, 0});
  CHECK(p[1].token == "<|endoftext|>");
  CHECK(p[1].span == Span{0, 13});
  p.clear();
  tok.tokenize("don't", p, true);
  REQUIRE(p.size() == 2);
  CHECK(p[0].token == "Ġdon");
  CHECK(p[0].span == Span{0, 3});
  CHECK(p[1].span == Span{3, 5});
}

TEST_CASE("decode inverts tokenization on every golden text") {
  std::ifstream in(darkbert::test::golden_dir() / "tokenization" / "gpt2.jsonl");
  REQUIRE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto text = j["text"].get<std::string>();
    std::vector<TokenPiece> p;
    bpe_gpt2().tokenize(text, p);
    std::vector<int> ids;
    for (const auto& x : p) ids.push_back(x.id);
    CHECK(bpe_gpt2().decode(ids) == text);
    ++n;
  }
  CHECK(n == 330);
}

TEST_CASE("merges apply by rank, all occurrences left to right; unknown results map to <|endoftext|>") {
  const auto dir = darkbert::test::scratch_dir("bpe_merges");
  const auto vocab = write_file(dir / "vocab.json", byte_vocab({"ab", "bc", "aa"}));
  const auto eot = 256 + 3;
  {
    const BpeTokenizer tok(vocab, write_file(dir / "m1.txt", "#version: 0.2\nb c\na b\n"));
    CHECK(tok.tokenize("abc") == Strings{"a", "bc"});
  }
  {
    const BpeTokenizer tok(vocab, write_file(dir / "m2.txt", "#version: 0.2\na b\nb c\n"));
    CHECK(tok.tokenize("abc") == Strings{"ab", "c"});
  }
  {  // a repeated pair keeps its last rank (as Python's dict in HF / encoder.py)
    const BpeTokenizer tok(vocab, write_file(dir / "m3.txt", "#version: 0.2\na b\nb c\na b\n"));
    CHECK(tok.tokenize("abc") == Strings{"a", "bc"});
  }
  {
    const BpeTokenizer tok(vocab, write_file(dir / "m4.txt", "a a\n"));  // no #version line: all are merges
    CHECK(tok.tokenize("aaa") == Strings{"aa", "a"});
    CHECK(tok.tokenize("aaaa") == Strings{"aa", "aa"});
  }
  {  // "ac" is not in vocab.json: the token string stays, the id is the unk (<|endoftext|>) id
    const BpeTokenizer tok(vocab, write_file(dir / "m5.txt", "#version: 0.2\na c\n"));
    std::vector<TokenPiece> p;
    tok.tokenize("ac", p);
    REQUIRE(p.size() == 1);
    CHECK(p[0].token == "ac");
    CHECK(p[0].id == eot);
    CHECK_FALSE(tok.find("ac").has_value());
  }
}

TEST_CASE("vocab.json and merges.txt errors name the file and line") {
  const auto dir = darkbert::test::scratch_dir("bpe_errors");
  const auto vocab = write_file(dir / "vocab.json", byte_vocab({"ab"}));
  const auto merges = write_file(dir / "merges.txt", "#version: 0.2\na b\n");
  CHECK(bpe_load_error(vocab, merges).empty());

  const auto missing = dir / "none" / "merges.txt";
  CHECK(bpe_load_error(vocab, missing) == "merges file '" + missing.string() + "' does not exist");
  CHECK(bpe_load_error(dir / "nothing.json", merges) ==
        "vocab file '" + (dir / "nothing.json").string() + "' does not exist");

  const auto m_bad = write_file(dir / "bad1.txt", "#version: 0.2\na b\nabc\nb c\n");
  CHECK(bpe_load_error(vocab, m_bad) ==
        m_bad.string() + ":3: expected two symbols separated by one space, got 'abc'");
  const auto m_three = write_file(dir / "bad2.txt", "#version: 0.2\na b c\n");
  CHECK(bpe_load_error(vocab, m_three) ==
        m_three.string() + ":2: expected two symbols separated by one space, got 'a b c'");
  const auto m_blank = write_file(dir / "bad3.txt", "#version: 0.2\na b\n\nb c\n");
  CHECK(bpe_load_error(vocab, m_blank) == m_blank.string() + ":3: expected two symbols separated by one space, got ''");
  const auto m_alpha = write_file(dir / "bad4.txt", "#version: 0.2\na b\n中 x\n");  // not a byte symbol
  CHECK(bpe_load_error(vocab, m_alpha) ==
        m_alpha.string() + ":3: '中' is not a byte-level symbol (U+4E2D is not in GPT-2's byte alphabet)");
  const auto m_utf8 = write_file(dir / "bad5.txt", "#version: 0.2\na \xFF\n");
  CHECK(bpe_load_error(vocab, m_utf8) ==
        m_utf8.string() + ":2: invalid UTF-8 at byte 0: byte that never occurs in UTF-8: 0xFF");
  const auto m_empty = write_file(dir / "empty.txt", "#version: 0.2\n");
  CHECK(bpe_load_error(vocab, m_empty) == m_empty.string() + ": no merges");

  const auto v_syntax = write_file(dir / "v1.json", "{\"a\": 0,\n \"b\": 1,\n \"c\" 2}");
  CHECK(bpe_load_error(v_syntax, merges) ==
        v_syntax.string() + ": parse error at line 3, column 6: syntax error while parsing object separator - "
                            "unexpected number literal; expected ':'");
  const auto v_type = write_file(dir / "v2.json", "{\"a\": 0, \"b\": \"1\"}");
  CHECK(bpe_load_error(v_type, merges) == v_type.string() + ": entry \"b\": id must be an integer, got \"1\"");
  const auto v_dup = write_file(dir / "v3.json", "{\"a\": 0, \"b\": 0}");
  CHECK(bpe_load_error(v_dup, merges) == v_dup.string() + ": entries \"a\" and \"b\" share id 0");
  const auto v_range = write_file(dir / "v4.json", "{\"a\": 0, \"b\": 5}");
  CHECK(bpe_load_error(v_range, merges) ==
        v_range.string() + ": entry \"b\": id 5 outside 0..1 (ids must number the 2 entries from 0)");
  const auto v_array = write_file(dir / "v5.json", "[1, 2]");
  CHECK(bpe_load_error(v_array, merges) ==
        v_array.string() + ": expected a JSON object {\"token\": id, ...}, got array");
  nlohmann::json no_eot = nlohmann::json::parse(byte_vocab({}));
  no_eot.erase("<|endoftext|>");
  const auto v_eot = write_file(dir / "v6.json", no_eot.dump());
  CHECK(bpe_load_error(v_eot, merges) == v_eot.string() + ": no '<|endoftext|>' entry (GPT-2 BPE needs it)");
}

TEST_CASE("invalid UTF-8 in the text names the byte offset") {
  CHECK_THROWS_WITH_AS(bpe_gpt2().tokenize("Hello \xE2\x82"),
                       "invalid UTF-8 at byte 6: sequence truncated by the end of the text", darkbert::error);
}
