// CoNLL-U reader: the three UD English EWT files with the README's counts, byte-identical round trip,
// text rebuilt from tokens, documents, and broken files.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::path
#include <map>         // std::map
#include <set>         // std::set
#include <sstream>     // std::ostringstream, std::istringstream
#include <string>      // std::string

#include "darkbert/data/conllu.hpp"
#include "darkbert/data/tsv.hpp"  // detail::read_whole_file
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;

namespace {

struct UdCounts {
  std::size_t sentences, words, multiword, empty, newdoc;
};

// ../shared/data/README.md, "ud/" table.
const std::map<std::string, UdCounts>& expected_ud() {
  static const std::map<std::string, UdCounts> e = {
      {"en_ewt-ud-train.conllu", {12544, 204577, 2614, 37, 540}},
      {"en_ewt-ud-dev.conllu", {2001, 25147, 359, 4, 318}},
      {"en_ewt-ud-test.conllu", {2077, 25094, 354, 2, 316}},
  };
  return e;
}

fs::path write_conllu(const std::string& name, const std::string& content) {
  static const auto dir = darkbert::test::scratch_dir("data_conllu");
  return darkbert::test::write_file(dir / name, content);
}

const std::string good =
    "# newdoc id = d1\n# sent_id = s1\n# text = Don't go.\n"
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tDo\tdo\tAUX\tVB\t_\t3\taux\t3:aux\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t3:advmod\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No\n"
    "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t3:punct\t_\n\n"
    "# sent_id = s2\n# text = Fine\n1\tFine\tfine\tADJ\tJJ\t_\t0\troot\t0:root\t_\n\n"
    "# newdoc\n# sent_id = s3\n# text = Yes\n1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\t_\n\n";

}  // namespace

TEST_CASE("UD English EWT: README counts, round trip byte for byte, # text = text from tokens") {
  for (const auto& expected : expected_ud()) {
    const auto& [name, want] = expected;
    INFO(expected.first);
    const auto path = darkbert::test::data_dir() / "ud" / name;
    const auto sentences = darkbert::read_conllu(path);
    UdCounts got{sentences.size(), 0, 0, 0, 0};
    std::set<std::string> sent_ids;
    std::size_t text_mismatch = 0, heads_bad = 0;
    for (const auto& s : sentences) {
      got.words += s.words.size();
      got.multiword += s.multiword_tokens.size();
      got.empty += s.empty_nodes.size();
      got.newdoc += s.starts_document;
      sent_ids.insert(s.sent_id);
      text_mismatch += darkbert::text_from_tokens(s) != s.text;
      std::size_t roots = 0;
      for (const auto& w : s.words) {
        roots += w.head == 0;
        heads_bad += w.head < 0 || w.upos.empty() || w.upos == "_";
      }
      CHECK(roots == 1);
    }
    CHECK(got.sentences == want.sentences);
    CHECK(got.words == want.words);
    CHECK(got.multiword == want.multiword);
    CHECK(got.empty == want.empty);
    CHECK(got.newdoc == want.newdoc);
    CHECK(sent_ids.size() == sentences.size());
    CHECK(text_mismatch == 0);
    CHECK(heads_bad == 0);
    CHECK(sentences.back().document + 1 == want.newdoc);
    std::ostringstream out;
    darkbert::write_conllu(out, sentences);
    CHECK(out.str() == darkbert::detail::read_whole_file(path));
  }
}

TEST_CASE("words, multi-word tokens, empty nodes, documents") {
  std::istringstream in(good);
  const auto s = darkbert::read_conllu(in, "good.conllu");
  REQUIRE(s.size() == 3);
  CHECK(s[0].sent_id == "s1");
  CHECK(s[0].text == "Don't go.");
  CHECK(s[0].starts_document);
  CHECK(s[0].document_id == "d1");
  CHECK(s[1].document_id == "d1");
  CHECK_FALSE(s[1].starts_document);
  CHECK(s[1].document == 0);
  CHECK(s[2].document == 1);
  CHECK(s[2].document_id.empty());
  REQUIRE(s[0].words.size() == 4);
  CHECK(s[0].words[1].form == "n't");
  CHECK(s[0].words[1].upos == "PART");
  CHECK(s[0].words[1].head == 3);
  CHECK(s[0].words[2].deprel == "root");
  CHECK_FALSE(s[0].words[2].space_after());
  REQUIRE(s[0].multiword_tokens.size() == 1);
  CHECK(s[0].multiword_tokens[0].first == 1);
  CHECK(s[0].multiword_tokens[0].last == 2);
  CHECK(s[0].multiword_tokens[0].form == "Don't");
  REQUIRE(s[0].empty_nodes.size() == 1);
  CHECK(s[0].empty_nodes[0].after == 3);
  CHECK(s[0].line == 1);
  CHECK(s[1].line == 11);
  const auto tokens = darkbert::surface_tokens(s[0]);
  REQUIRE(tokens.size() == 3);
  CHECK(tokens[0].form == "Don't");
  CHECK(tokens[0].last_word == 1);
  CHECK(darkbert::text_from_tokens(s[0]) == "Don't go.");
  std::ostringstream out;
  darkbert::write_conllu(out, s);
  CHECK(out.str() == good);
}

TEST_CASE("spacing after a token: SpaceAfter=No, SpacesAfter= escapes, default one space") {
  CHECK(darkbert::detail::spaces_after("_") == " ");
  CHECK(darkbert::detail::spaces_after("SpaceAfter=No") == "");
  CHECK(darkbert::detail::spaces_after("Foo=1|SpaceAfter=No") == "");
  CHECK(darkbert::detail::spaces_after("SpacesAfter=\\u00A0") == "\xC2\xA0");
  CHECK(darkbert::detail::spaces_after("SpacesAfter=\\s\\s|X=y") == "  ");
  CHECK(darkbert::detail::spaces_after("SpacesAfter=\\n\\p") == "\n|");
}

TEST_CASE("streaming reader visits every sentence") {
  std::istringstream in(good);
  std::size_t n = 0;
  darkbert::for_each_conllu_sentence(in, "good", [&](darkbert::ConlluSentence&& s) { n += s.words.size(); });
  CHECK(n == 6);
}

TEST_CASE("broken CoNLL-U files: errors name the file, the line and the problem") {
  struct Case {
    const char* name;
    std::string content;
    const char* where;
    const char* what;
  };
  const std::string w1 = "1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n";
  const std::string w2 = "2\tb\tb\tNOUN\tNN\t_\t0\troot\t_\t_\n";
  const Case cases[] = {
      {"columns.conllu", "# sent_id = 1\n1\tA\ta\tDET\n", "columns.conllu:2:", "expected 10 tab-separated columns, got 4"},
      {"order.conllu", w1 + "3\tb\tb\tNOUN\tNN\t_\t0\troot\t_\t_\n", "order.conllu:2:", "word ID 3 out of order (expected 2)"},
      {"id.conllu", "x\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_\n", "id.conllu:1:", "bad word ID 'x'"},
      {"head.conllu", "1\tA\ta\tDET\tDT\t_\tz\tdet\t_\t_\n", "head.conllu:1:", "bad HEAD 'z'"},
      {"headrange.conllu", "\n" + w1 + "\n", "headrange.conllu:2:", "HEAD 2 but the sentence has 1 words"},
      {"mwt.conllu", w1 + w2 + "3-5\tx\t_\t_\t_\t_\t_\t_\t_\t_\n3\tc\tc\tX\tX\t_\t0\tdep\t_\t_\n", "mwt.conllu:3:",
       "multi-word token ends at word 5 but the sentence has 3 words"},
      {"mwtstart.conllu", w1 + "3-4\tx\t_\t_\t_\t_\t_\t_\t_\t_\n", "mwtstart.conllu:2:", "must start at the next word (2)"},
      {"comment.conllu", w1 + "# late comment\n" + w2, "comment.conllu:2:", "comment line inside a sentence"},
      {"empty.conllu", w1 + "2.1\tx\tx\tX\tX\t_\t_\t_\t_\t_\n", "empty.conllu:2:", "empty node ID '2.1' must be 1.k"},
      {"nowords.conllu", "# sent_id = 1\n\n", "nowords.conllu:1:", "sentence without words"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto msg = message_of([&] { darkbert::read_conllu(write_conllu(c.name, c.content)); });
    CHECK(msg.find(c.where) != std::string::npos);
    CHECK(msg.find(c.what) != std::string::npos);
  }
  CHECK(message_of([] { darkbert::read_conllu(fs::path("/nonexistent/x.conllu")); }).find("/nonexistent/x.conllu: cannot open") !=
        std::string::npos);
}
