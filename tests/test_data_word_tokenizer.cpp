// Word tokenizer: the documented rules case by case, spans that tile the text, and agreement with the
// gold words of UD English EWT dev (re-tokenized from "# text").
#include <doctest/doctest.h>

#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/data/conllu.hpp"
#include "darkbert/data/word_tokenizer.hpp"
#include "test_support.hpp"

namespace {

std::vector<std::string> forms(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& w : darkbert::tokenize_words(text)) out.push_back(w.form);
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("documented rules") {
  CHECK(forms("") == V{});
  CHECK(forms("  \t ") == V{});
  CHECK(forms("The cat sat.") == V{"The", "cat", "sat", "."});
  // clitics
  CHECK(forms("I don't think it's here.") == V{"I", "do", "n't", "think", "it", "'s", "here", "."});
  CHECK(forms("can't won't CANNOT") == V{"ca", "n't", "wo", "n't", "CAN", "NOT"});
  CHECK(forms("we're they've I'm she'd you'll") == V{"we", "'re", "they", "'ve", "I", "'m", "she", "'d", "you", "'ll"});
  CHECK(forms("it’s isn’t") == V{"it", "’s", "is", "n’t"});
  CHECK(forms("gonna wanna gotta") == V{"gon", "na", "wan", "na", "got", "ta"});
  CHECK(forms("dont didnt") == V{"do", "nt", "did", "nt"});
  CHECK(forms("parents' house") == V{"parents", "'", "house"});
  // pre-tokenized input (SST-2) keeps its clitics whole
  CHECK(forms("it 's a charming journey . ") == V{"it", "'s", "a", "charming", "journey", "."});
  CHECK(forms("does n't work") == V{"does", "n't", "work"});
  // punctuation
  CHECK(forms("(Hello), \"world\"!") == V{"(", "Hello", ")", ",", "\"", "world", "\"", "!"});
  CHECK(forms("Really?! Wait... ok") == V{"Really", "?!", "Wait", "...", "ok"});
  CHECK(forms("“Yes,” she said.") == V{"“", "Yes", ",", "”", "she", "said", "."});
  CHECK(forms("up 5% now") == V{"up", "5", "%", "now"});
  // numbers, money, times, dates, phone numbers
  CHECK(forms("$2.50 for 1,000 at 10:30 on 1/2/2004, call 555-1234") ==
        V{"$", "2.50", "for", "1,000", "at", "10:30", "on", "1/2/2004", ",", "call", "555-1234"});
  // abbreviations keep their period; sentence periods are split
  CHECK(forms("Mr. Smith met Dr. Jones in the U.S. yesterday.") ==
        V{"Mr.", "Smith", "met", "Dr.", "Jones", "in", "the", "U.S.", "yesterday", "."});
  CHECK(forms("e.g. this, etc.") == V{"e.g.", "this", ",", "etc."});
  // hyphens, slashes, dashes
  CHECK(forms("a 15-year-old and/or state-of-the-art") ==
        V{"a", "15", "-", "year", "-", "old", "and", "/", "or", "state", "-", "of", "-", "the", "-", "art"});
  CHECK(forms("wait -- no—yes") == V{"wait", "--", "no", "—", "yes"});
  // URLs, e-mail, emoticons stay whole
  CHECK(forms("see http://example.com/a.html or www.x.org, mail a.b@c.com :)") ==
        V{"see", "http://example.com/a.html", "or", "www.x.org", ",", "mail", "a.b@c.com", ":)"});
  CHECK(forms("AT&T") == V{"AT&T"});
}

TEST_CASE("spans are the bytes of each word, in order, covering every non-space byte") {
  const std::string text = "Zoë said: \"I can't\u00A0go\" — (really?)  It's 5pm.";
  const auto words = darkbert::tokenize_words(text);
  std::size_t covered = 0, prev_end = 0;
  for (const auto& w : words) {
    CHECK(w.span.begin >= prev_end);
    CHECK(w.span.end > w.span.begin);
    CHECK(text.substr(w.span.begin, w.span.end - w.span.begin) == w.form);
    covered += w.span.end - w.span.begin;
    prev_end = w.span.end;
  }
  std::size_t spaces = 0;
  for (std::size_t i = 0; i < text.size(); ++i) spaces += text[i] == ' ';
  CHECK(covered + spaces + 2 == text.size());  // + the 2-byte no-break space
  CHECK(words[0].form == "Zoë");
}

TEST_CASE("agreement with UD English EWT dev words (re-tokenized from # text)") {
  const auto dev = darkbert::read_conllu(darkbert::test::data_dir() / "ud" / "en_ewt-ud-dev.conllu");
  std::size_t gold = 0, predicted = 0, matched = 0;
  for (const auto& s : dev) {
    // Gold words as their sequence of forms; predicted words likewise; count the longest common run of equal
    // word boundaries by walking both with character positions (spaces removed).
    std::vector<std::pair<std::size_t, std::size_t>> g, p;
    std::size_t pos = 0;
    for (const auto& w : s.words) {
      g.emplace_back(pos, pos + w.form.size());
      pos += w.form.size();
    }
    pos = 0;
    for (const auto& w : darkbert::tokenize_words(s.text)) {
      p.emplace_back(pos, pos + w.form.size());
      pos += w.form.size();
    }
    gold += g.size();
    predicted += p.size();
    std::size_t i = 0, j = 0;
    while (i < g.size() && j < p.size()) {
      if (g[i] == p[j]) {
        ++matched;
        ++i;
        ++j;
      } else if (g[i].first < p[j].first || (g[i].first == p[j].first && g[i].second < p[j].second)) {
        ++i;
      } else {
        ++j;
      }
    }
  }
  const double precision = static_cast<double>(matched) / static_cast<double>(predicted);
  const double recall = static_cast<double>(matched) / static_cast<double>(gold);
  MESSAGE("EWT dev word segmentation: precision ", precision, ", recall ", recall);
  CHECK(gold == 25147);
  CHECK(precision > 0.97);
  CHECK(recall > 0.97);
}
