// WordPiece (tokenizer/wordpiece.hpp): the differences between the HF and Google flavours, options,
// byte offsets through lower-casing / NFC / accent stripping, and every vocab.txt error path.
// (Every line of the golden tokenization files is checked in test_tokenizer_tokenizer.cpp.)
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::path
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/tokenizer/wordpiece.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using darkbert::BertFlavour;
using darkbert::Span;
using darkbert::TokenPiece;
using darkbert::WordPieceOptions;
using darkbert::WordPieceTokenizer;
using darkbert::test::write_file;

fs::path uncased_vocab() { return darkbert::test::data_dir() / "vocab" / "bert-base-uncased" / "vocab.txt"; }
fs::path cased_vocab() { return darkbert::test::data_dir() / "vocab" / "bert-base-cased" / "vocab.txt"; }

WordPieceOptions opts(bool lowercase, BertFlavour flavour) {
  WordPieceOptions o;
  o.lowercase = lowercase;
  o.flavour = flavour;
  return o;
}

using Strings = std::vector<std::string>;

std::vector<TokenPiece> pieces(const WordPieceTokenizer& wp, const std::string& text) {
  std::vector<TokenPiece> out;
  wp.tokenize(text, out);
  return out;
}

std::string wordpiece_load_error(const fs::path& path) {
  return darkbert::test::message_of([&] { WordPieceTokenizer wp(path); });
}

}  // namespace

TEST_CASE("HF keeps special-token strings whole, Google splits them") {
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const WordPieceTokenizer google(uncased_vocab(), opts(true, BertFlavour::google));
  CHECK(hf.tokenize("x[MASK]y") == Strings{"x", "[MASK]", "y"});
  CHECK(google.tokenize("x[MASK]y") == Strings{"x", "[", "mask", "]", "y"});
  // lower-case spellings are not special
  CHECK(hf.tokenize("[mask]") == Strings{"[", "mask", "]"});
  const auto p = pieces(hf, "x[MASK]y");
  REQUIRE(p.size() == 3);
  CHECK(p[1].id == 103);
  CHECK(p[1].span == Span{1, 7});
  CHECK(p[1].word == 1);
  CHECK(p[2].word == 2);
  // A word that spells a special token only after cleaning stays whole too (HF never_split), cased only:
  // the uncased tokenizer lower-cases it first.
  const WordPieceTokenizer cased(cased_vocab(), opts(false, BertFlavour::hf));
  const std::string hidden("[MA\0SK]", 7);
  CHECK(cased.tokenize(hidden) == Strings{"[MASK]"});
  CHECK(pieces(cased, hidden)[0].span == Span{0, 7});
  const WordPieceTokenizer cased_google(cased_vocab(), opts(false, BertFlavour::google));
  CHECK(cased_google.tokenize(hidden) == Strings{"[", "MA", "##S", "##K", "]"});
}

TEST_CASE("final sigma: HF lowers per character (σ), Google whole words (ς)") {
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const WordPieceTokenizer google(uncased_vocab(), opts(true, BertFlavour::google));
  CHECK(hf.tokenize("ΌΣΟΣ") == Strings{"ο", "##σ", "##ο", "##σ"});
  CHECK(google.tokenize("ΌΣΟΣ") == Strings{"ο", "##σ", "##ος"});
}

TEST_CASE("control characters: HF drops every C* character, Google only Cc and Cf") {
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const WordPieceTokenizer google(uncased_vocab(), opts(true, BertFlavour::google));
  CHECK(hf.tokenize("a\u200Bb") == Strings{"ab"});          // Cf: both drop it
  CHECK(google.tokenize("a\u200Bb") == Strings{"ab"});
  CHECK(hf.tokenize("a\uE000b") == Strings{"ab"});          // Co (private use): HF drops it
  CHECK(google.tokenize("a\uE000b") == Strings{"[UNK]"});   // Google keeps it: unknown word
  CHECK(hf.tokenize(std::string("a\0b\xEF\xBF\xBD" "c", 7)) == Strings{"abc"});  // NUL, U+FFFD
  CHECK(hf.tokenize("tab\tnew\nline\r\u3000x") == Strings{"tab", "new", "line", "x"});
  CHECK(hf.tokenize("").empty());
  CHECK(hf.tokenize(" \t\n ").empty());
}

TEST_CASE("NFC in HF only: a decomposed accent in a cased model") {
  const WordPieceTokenizer hf(cased_vocab(), opts(false, BertFlavour::hf));
  const WordPieceTokenizer google(cased_vocab(), opts(false, BertFlavour::google));
  CHECK(hf.tokenize("cafe\u0301") == Strings{"café"});
  CHECK(google.tokenize("cafe\u0301") == Strings{"cafe", "##\u0301"});
  CHECK(hf.tokenize("Café") == Strings{"Café"});
  // strip_accents without lower-casing (HF strip_accents=True on a cased vocab)
  WordPieceOptions strip = opts(false, BertFlavour::hf);
  strip.strip_accents = true;
  CHECK(WordPieceTokenizer(cased_vocab(), strip).tokenize("Café") == Strings{"Cafe"});
  // lower-casing without stripping accents: "café" is not in the (accent-free) uncased vocabulary
  WordPieceOptions keep = opts(true, BertFlavour::hf);
  keep.strip_accents = false;
  CHECK(WordPieceTokenizer(uncased_vocab(), keep).tokenize("CAFÉ") == Strings{"[UNK]"});
  CHECK(WordPieceTokenizer(uncased_vocab(), opts(true, BertFlavour::hf)).tokenize("CAFÉ") == Strings{"cafe"});
}

TEST_CASE("max_chars_per_word: flavour defaults and override") {
  const std::string w150(150, 'y');
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const WordPieceTokenizer google(uncased_vocab(), opts(true, BertFlavour::google));
  CHECK(hf.max_chars_per_word() == 100);
  CHECK(google.max_chars_per_word() == 200);
  CHECK(hf.tokenize(std::string(100, 'x')).size() > 1);
  CHECK(hf.tokenize(std::string(101, 'x')) == Strings{"[UNK]"});
  CHECK(hf.tokenize(w150) == Strings{"[UNK]"});
  CHECK(google.tokenize(w150).size() > 1);
  WordPieceOptions o = opts(true, BertFlavour::hf);
  o.max_chars_per_word = 200;
  const WordPieceTokenizer wide(uncased_vocab(), o);
  CHECK(wide.tokenize(w150) == google.tokenize(w150));
  // the limit counts characters, not bytes: 100 two-byte characters are allowed
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "é";
  CHECK(hf.tokenize(e100).size() > 1);
  CHECK(hf.tokenize(e100 + "é") == Strings{"[UNK]"});
}

TEST_CASE("CJK ideographs are words of their own; tokenize_chinese_chars=false keeps runs") {
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const auto p = pieces(hf, "你好，世界！");
  REQUIRE(p.size() == 6);
  CHECK(p[3].token == "世");
  CHECK(p[3].span == Span{9, 12});
  CHECK(p[3].word == 3);
  CHECK(p[0].token == "[UNK]");
  CHECK(p[0].span == Span{0, 3});
  CHECK(p[5].token == "！");
  CHECK(p[5].span == Span{15, 18});
  WordPieceOptions o = opts(true, BertFlavour::hf);
  o.tokenize_chinese_chars = false;
  CHECK(WordPieceTokenizer(uncased_vocab(), o).tokenize("世世") == Strings{"世", "##世"});
}

TEST_CASE("offsets point at the original bytes through lower-casing, NFC and accent stripping") {
  const WordPieceTokenizer hf(uncased_vocab(), opts(true, BertFlavour::hf));
  const std::string text = "Café au lait!";
  const auto p = pieces(hf, text);
  REQUIRE(p.size() == 5);
  CHECK(p[0].token == "cafe");
  CHECK(p[0].span == Span{0, 5});  // "Café" incl. the two-byte é
  CHECK(p[2].token == "lai");
  CHECK(p[2].span == Span{9, 12});
  CHECK(p[3].token == "##t");
  CHECK(p[3].span == Span{12, 13});
  CHECK(p[3].word == 2);
  CHECK(p[4].span == Span{13, 14});
  CHECK(p[4].word == 3);

  const auto multi = pieces(hf, "ÅNGSTRÖM");  // two pieces of one accented word
  REQUIRE(multi.size() == 2);
  CHECK(multi[0].token == "ang");
  CHECK(multi[0].span == Span{0, 4});
  CHECK(multi[1].token == "##strom");
  CHECK(multi[1].span == Span{4, 10});

  const auto combining = pieces(hf, "cafe\u0301 x");  // NFC composite covers e + U+0301
  REQUIRE(combining.size() == 2);
  CHECK(combining[0].span == Span{0, 6});
  CHECK(combining[1].span == Span{7, 8});

  const auto dotted = pieces(hf, "İstanbul");  // İ lowers to two code points, both from bytes 0..2
  REQUIRE(dotted.size() == 1);
  CHECK(dotted[0].token == "istanbul");
  CHECK(dotted[0].span == Span{0, 9});

  const auto punct = pieces(hf, "hello,world");
  REQUIRE(punct.size() == 3);
  CHECK(punct[1].span == Span{5, 6});
  CHECK(punct[2].word == 2);
}

TEST_CASE("vocabulary access") {
  const WordPieceTokenizer wp(uncased_vocab());
  CHECK(wp.vocab_size() == 30522);
  CHECK(wp.unk_id() == 100);
  CHECK(wp.cls_id() == 101);
  CHECK(wp.sep_id() == 102);
  CHECK(wp.pad_id() == 0);
  CHECK(wp.mask_id() == 103);
  CHECK(wp.token_to_id("hello") == 7592);
  CHECK(wp.token_to_id("no-such-token") == 100);
  CHECK_FALSE(wp.find("no-such-token").has_value());
  CHECK(wp.id_to_token(7592) == "hello");
  CHECK_THROWS_WITH_AS(wp.id_to_token(30522), doctest::Contains("token id 30522 is outside the vocabulary"),
                       darkbert::error);
  // an in-memory vocabulary
  const WordPieceTokenizer tiny({"[UNK]", "un", "##aff", "##able"}, WordPieceOptions{}, "tiny");
  CHECK(tiny.tokenize("unaffable unable unx") == Strings{"un", "##aff", "##able", "un", "##able", "[UNK]"});
}

TEST_CASE("invalid UTF-8 in the text names the byte offset") {
  const WordPieceTokenizer wp(uncased_vocab());
  CHECK_THROWS_WITH_AS(wp.tokenize("abc \xC3("), "invalid UTF-8 at byte 4: sequence interrupted: expected a "
                       "continuation byte, got 0x28", darkbert::error);
}

TEST_CASE("vocab.txt errors name the file and line") {
  const auto dir = darkbert::test::scratch_dir("wordpiece_errors");
  const auto missing = dir / "nope" / "vocab.txt";
  CHECK(wordpiece_load_error(missing) == "vocab file '" + missing.string() + "' does not exist");
  CHECK(wordpiece_load_error(dir) == "vocab file '" + dir.string() + "' is a directory, not a file");
  const auto empty_line = write_file(dir / "empty_line.txt", "[UNK]\nhello\n\nworld\n");
  CHECK(wordpiece_load_error(empty_line) == empty_line.string() + ":3: empty token (every line must hold one token)");
  const auto dup = write_file(dir / "dup.txt", "[UNK]\nhello\nworld\nhello\n");
  CHECK(wordpiece_load_error(dup) == dup.string() + ":4: duplicate token 'hello' (first on line 2)");
  const auto bad_utf8 = write_file(dir / "bad.txt", "[UNK]\nok\nbad\xFF\n");
  CHECK(wordpiece_load_error(bad_utf8) ==
        bad_utf8.string() + ":3: invalid UTF-8 at byte 3: byte that never occurs in UTF-8: 0xFF");
  const auto no_unk = write_file(dir / "no_unk.txt", "[PAD]\nhello\n");
  CHECK(wordpiece_load_error(no_unk) == no_unk.string() + ": no [UNK] token (WordPiece needs it for unknown words)");
  const auto empty = write_file(dir / "empty.txt", "");
  CHECK(wordpiece_load_error(empty) == empty.string() + ": empty vocabulary");
  // CRLF line ends are accepted (the \r is not part of the token); no final newline is fine too
  const auto crlf = write_file(dir / "crlf.txt", "[UNK]\r\nhello\r\nworld");
  const WordPieceTokenizer wp(crlf);
  CHECK(wp.vocab_size() == 3);
  CHECK(wp.tokenize("Hello world") == Strings{"hello", "world"});
}
