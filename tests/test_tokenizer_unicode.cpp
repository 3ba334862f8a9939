// Unicode tables and algorithms (tokenizer/unicode.hpp): exhaustive fingerprints over every code point
// against values computed with the reference Python (unicodedata 14, the `regex` module, str.lower),
// spot checks, normalisation invariants, and UTF-8 decoding/encoding with every error path.
#include <doctest/doctest.h>

#include <cstdint>  // std::uint64_t
#include <cstdio>   // std::snprintf
#include <string>   // std::string, std::u32string
#include <vector>   // std::vector

#include "darkbert/tokenizer/unicode.hpp"
#include "test_support.hpp"

namespace {

using namespace darkbert::unicode;

// 64-bit FNV-1a over a stream of integers, the same as the Python that produced the expected values:
//   h = 0xcbf29ce484222325; for x in values: h = ((h ^ x) * 0x100000001b3) mod 2**64
struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void add(std::uint64_t x) { h = (h ^ x) * 0x100000001b3ull; }
  void add(const std::u32string& s) {
    add(s.size());
    for (char32_t c : s) add(c);
  }
};

bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

std::string decode_error(std::string_view bytes) {
  return darkbert::test::message_of([&] { decode_utf8(bytes); });
}

std::string hex(const std::u32string& s) {
  std::string out;
  char buf[16];
  for (char32_t c : s) {
    std::snprintf(buf, sizeof buf, "%s%04X", out.empty() ? "" : " ", static_cast<unsigned>(c));
    out += buf;
  }
  return out;
}

}  // namespace

// Expected fingerprints: computed over all code points except surrogates with /usr/bin/python3
// (unicodedata.category, regex \p{L} \p{N} \s + str.isspace, str.lower, NFD, NFC, unicodedata.combining,
// and the Final_Sigma behaviour of str.lower); see the comments for the exact Python.
TEST_CASE("general categories of every code point match unicodedata 14") {
  Fnv h;  // h.add(CATEGORIES.index(unicodedata.category(c)))
  for (char32_t cp = 0; cp < 0x110000; ++cp)
    if (!is_surrogate(cp)) h.add(static_cast<std::uint64_t>(category(cp)));
  CHECK(h.h == 0x27B70267BF7F8A19ull);
}

TEST_CASE("regex-module classes and str.isspace of every code point") {
  Fnv h;  // h.add(L | N << 1 | s << 2 | c.isspace() << 3)
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    h.add((is_regex_letter(cp) ? 1 : 0) | (is_regex_number(cp) ? 2 : 0) | (is_regex_space(cp) ? 4 : 0) |
          (is_python_space(cp) ? 8 : 0));
  }
  CHECK(h.h == 0x6DA6220055761ABFull);
}

TEST_CASE("str.lower, NFD, NFC and combining class of every single code point") {
  Fnv lower, d, c, ccc;
  int changed_by_lower = 0, changed_by_nfd = 0, changed_by_nfc = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    const std::u32string s(1, cp);
    const std::u32string l = to_lower(s), dd = nfd(s), cc = nfc(s);
    lower.add(l);
    d.add(dd);
    c.add(cc);
    ccc.add(static_cast<std::uint64_t>(combining_class(cp)));
    changed_by_lower += l != s;
    changed_by_nfd += dd != s;
    changed_by_nfc += cc != s;
  }
  CHECK(lower.h == 0x410D3D64117C0777ull);
  CHECK(d.h == 0x8B09E74F9EAA8AF8ull);
  CHECK(c.h == 0xC43F09E6F42D7FF9ull);
  CHECK(ccc.h == 0xCBA230717673D1B6ull);
  CHECK(changed_by_lower == 1433);
  CHECK(changed_by_nfd == 13233);
  CHECK(changed_by_nfc == 1120);
}

TEST_CASE("Final_Sigma context of every code point, as str.lower sees it") {
  // a = (c+'Σ').lower()[-1]=='ς'; b = ('A'+c+'Σ').lower()[-1]=='ς'; f = ('AΣ'+c).lower()[1]=='ς'
  Fnv h;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    const std::u32string x = to_lower(std::u32string{cp, 0x3A3});
    const std::u32string y = to_lower(std::u32string{U'A', cp, 0x3A3});
    const std::u32string z = to_lower(std::u32string{U'A', 0x3A3, cp});
    const int a = x.back() == 0x3C2, b = y.back() == 0x3C2, f = z[1] == 0x3C2;
    h.add(static_cast<std::uint64_t>(a | (b << 1) | (f << 2)));
  }
  CHECK(h.h == 0x13CEA956B654D616ull);
}

TEST_CASE("normalisation invariants hold for every code point") {
  int failures = 0;
  for (char32_t cp = 0; cp < 0x110000 && failures < 5; ++cp) {
    if (is_surrogate(cp)) continue;
    const std::u32string s(1, cp);
    const std::u32string d = nfd(s);
    bool ok = nfd(d) == d && nfc(d) == nfc(s) && nfd(nfc(s)) == d;
    for (char32_t piece : d) ok = ok && nfd(std::u32string(1, piece)) == std::u32string(1, piece);
    if (!ok) {
      ++failures;
      FAIL_CHECK("normalisation invariant broken for U+", hex(s));
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("category and class spot checks") {
  CHECK(category(U'!') == Category::Po);
  CHECK(category(U'A') == Category::Lu);
  CHECK(category(U'\u00E9') == Category::Ll);
  CHECK(category(U'\u0301') == Category::Mn);
  CHECK(category(U'\u4E2D') == Category::Lo);
  CHECK(category(U'\u00A0') == Category::Zs);
  CHECK(category(U'\u2028') == Category::Zl);
  CHECK(category(U'\u200B') == Category::Cf);
  CHECK(category(U'\U0001F600') == Category::So);
  CHECK(category(U'\uE000') == Category::Co);
  CHECK(category(U'\u0378') == Category::Cn);
  CHECK(category(char32_t{0xD800}) == Category::Cs);
  CHECK(category(char32_t{0x110000}) == Category::Cn);
  CHECK(category(U'\u0663') == Category::Nd);
  CHECK(category(U'\u00BD') == Category::No);
  CHECK(category(U'_') == Category::Pc);
  CHECK(category(U'\u00AB') == Category::Pi);
  CHECK(category(U'$') == Category::Sc);
  CHECK(category(U'\u0903') == Category::Mc);
  CHECK(major_class(Category::Pf) == 'P');
  CHECK(major_class(Category::Cn) == 'C');
  // The regex module knows newer Unicode: U+1123F is a letter there but unassigned in unicodedata 14.
  CHECK(is_regex_letter(U'\U0001123F'));
  CHECK(category(U'\U0001123F') == Category::Cn);
  CHECK(is_regex_letter(U'\u00E9'));
  CHECK_FALSE(is_regex_letter(U'\u0301'));
  CHECK(is_regex_number(U'\u00BD'));
  CHECK(is_regex_number(U'\u0663'));
  // \s of the regex module excludes U+001C..U+001F, which str.isspace() includes.
  CHECK_FALSE(is_regex_space(U'\x1C'));
  CHECK(is_python_space(U'\x1C'));
  CHECK(is_regex_space(U'\x85'));
  CHECK(is_regex_space(U'\u3000'));
  CHECK_FALSE(is_regex_space(U'\u200B'));
  CHECK(is_python_space(U'\u2029'));
  CHECK(combining_class(U'\u0301') == 230);
  CHECK(combining_class(U'\u0316') == 220);
  CHECK(combining_class(U'a') == 0);
}

TEST_CASE("lower-case spot checks (Python str.lower)") {
  CHECK(to_lower(U"HeLLo") == U"hello");
  CHECK(to_lower(U"\u0130") == U"i\u0307");             // İ -> i + combining dot above
  CHECK(to_lower(U"\u03A3") == U"\u03C3");              // lone Σ -> σ
  CHECK(to_lower(U"\u038C\u03A3\u039F\u03A3") == U"\u03CC\u03C3\u03BF\u03C2");  // ΌΣΟΣ -> όσος
  CHECK(to_lower(U"\u03A3\u0391") == U"\u03C3\u03B1");  // word-initial: σ
  CHECK(to_lower(U"A\u03A3.") == U"a\u03C2.");          // '.' is case-ignorable: still final
  CHECK(to_lower(U"A.\u03A3") == U"a.\u03C2");
  CHECK(to_lower(U"A\u03A3\u0301B") == U"a\u03C3\u0301b");
  CHECK(to_lower(U"\u0391\u03A3\u0301") == U"\u03B1\u03C2\u0301");
  CHECK(to_lower(U"\u212A") == U"k");                   // Kelvin sign
  CHECK(to_lower(U"\u2126") == U"\u03C9");              // Ohm sign
  CHECK(to_lower(U"\u01C5") == U"\u01C6");              // titlecase ǅ
  CHECK(to_lower(U"\u1E9E") == U"\u00DF");              // capital sharp s
  CHECK(to_lower(U"\u00DF") == U"\u00DF");
  // lower_each has no context: every Σ becomes σ (HF's per-character lowering).
  std::vector<TextChar> in = {{0x39F, 0, 2}, {0x3A3, 2, 4}}, out;
  lower_each(in, out);
  REQUIRE(out.size() == 2);
  CHECK(out[1].cp == 0x3C3);
  CHECK(out[1].begin == 2);
  CHECK(out[1].end == 4);
  lower_string(in, out);
  CHECK(out[1].cp == 0x3C2);
}

TEST_CASE("NFD / NFC spot checks, with spans") {
  CHECK(hex(nfd(U"\u00E9")) == "0065 0301");
  CHECK(hex(nfc(U"e\u0301")) == "00E9");
  CHECK(hex(nfd(U"\u212B")) == "0041 030A");          // Angstrom sign
  CHECK(hex(nfc(U"\u212B")) == "00C5");
  CHECK(hex(nfc(U"\u2126")) == "03A9");               // singleton
  CHECK(hex(nfd(U"\uD55C")) == "1112 1161 11AB");     // Hangul syllable
  CHECK(hex(nfc(U"\u1100\u1161\u11A8")) == "AC01");
  CHECK(hex(nfd(U"a\u0301\u0316")) == "0061 0316 0301");  // canonical ordering 220 < 230
  CHECK(hex(nfc(U"a\u0301\u0316")) == "00E1 0316");
  CHECK(hex(nfc(U"\u0344")) == "0308 0301");          // non-starter decomposition is never recomposed
  CHECK(hex(nfc(U"\u0958")) == "0915 093C");          // composition exclusion
  CHECK(hex(nfc(U"c\u0327\u0301")) == "1E09");        // two-step composition
  CHECK(hex(nfc(U"a\u0301\u0301")) == "00E1 0301");   // the second acute is blocked
  CHECK(hex(nfc(U"\u0301a")) == "0301 0061");         // leading non-starter
  CHECK(hex(nfc(U"\uFB01")) == "FB01");               // compatibility only: untouched
  CHECK(nfc(U"").empty());

  // A composite covers the union of its parts' spans; decomposed parts inherit their source span.
  std::vector<TextChar> chars, out;
  decode_utf8("cafe\xCC\x81!", chars);
  nfc(chars, out);
  REQUIRE(out.size() == 5);
  CHECK(out[3].cp == 0xE9);
  CHECK(out[3].begin == 3);
  CHECK(out[3].end == 6);
  CHECK(out[4].begin == 6);
  std::vector<TextChar> d;
  nfd(out, d);
  REQUIRE(d.size() == 6);
  CHECK(d[4].cp == 0x301);
  CHECK(d[4].begin == 3);
  CHECK(d[4].end == 6);
}

TEST_CASE("UTF-8 round trip of every scalar value, with byte spans") {
  std::string all;
  std::u32string expected;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    append_utf8(all, cp);
    expected.push_back(cp);
  }
  CHECK(decode_utf8(all) == expected);
  CHECK(encode_utf8(expected) == all);
  std::vector<TextChar> chars;
  decode_utf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", chars, 10);
  REQUIRE(chars.size() == 4);
  CHECK(chars[0].begin == 10);
  CHECK(chars[1].begin == 11);
  CHECK(chars[1].end == 13);
  CHECK(chars[2].end == 16);
  CHECK(chars[3].cp == 0x1F600);
  CHECK(chars[3].end == 20);
}

TEST_CASE("invalid UTF-8 is rejected with the byte offset") {
  CHECK(decode_error("ab\x80") == "invalid UTF-8 at byte 2: unexpected continuation byte 0x80");
  CHECK(decode_error("abc\xE2\x82") == "invalid UTF-8 at byte 3: sequence truncated by the end of the text");
  CHECK(decode_error("\xC0\xAF") == "invalid UTF-8 at byte 0: byte that never occurs in UTF-8: 0xC0");
  CHECK(decode_error("x\xE0\x80\xAF") == "invalid UTF-8 at byte 1: overlong encoding");
  CHECK(decode_error("xy\xED\xA0\x80") == "invalid UTF-8 at byte 2: encoded surrogate");
  CHECK(decode_error("\xF4\x90\x80\x80") == "invalid UTF-8 at byte 0: code point above U+10FFFF");
  CHECK(decode_error("ok \xF5\x80\x80\x80") == "invalid UTF-8 at byte 3: byte that never occurs in UTF-8: 0xF5");
  CHECK(decode_error("\xC3" "A") ==
        "invalid UTF-8 at byte 0: sequence interrupted: expected a continuation byte, got 0x41");
  CHECK(decode_error("\xFF") == "invalid UTF-8 at byte 0: byte that never occurs in UTF-8: 0xFF");
  // the base offset of a slice shows in the message
  std::vector<TextChar> chars;
  CHECK_THROWS_WITH_AS(decode_utf8("\x80", chars, 7), "invalid UTF-8 at byte 7: unexpected continuation byte 0x80",
                       darkbert::error);
  CHECK(decode_error("plain ASCII and \xC3\xA9") == "");
}
