// Annotator: scores of the small fixture model on all of UD EWT dev (gold words and raw text), save/load
// round trip, annotate() on raw text, annotate_conllu keeping everything but UPOS/DEPREL, the cached
// default model, and broken model files.
#include <doctest/doctest.h>

#include <chrono>      // std::chrono::steady_clock (the limits keep huge inputs fast)
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <sstream>     // std::ostringstream, std::istringstream
#include <string>      // std::string

#include "darkbert/data/annotator.hpp"
#include "test_data_fixtures.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;

namespace {

std::string saved(const darkbert::Annotator& a) {
  std::ostringstream out;
  a.save(out);
  return out.str();
}

}  // namespace

TEST_CASE("scores on EWT dev: gold word segmentation and raw text") {
  const auto& a = darkbert::test::small_annotator();
  const auto& dev = darkbert::test::ewt_dev();
  const auto gold = darkbert::evaluate_annotator(a, dev);
  CHECK(gold.sentences == 2001);
  CHECK(gold.gold_words == 25147);
  CHECK(gold.predicted_words == 25147);
  CHECK(gold.upos.precision() == doctest::Approx(gold.upos.recall()));
  MESSAGE("small model, gold words: UPOS ", gold.upos_accuracy(), ", subject F1 ", gold.subject.f1(), ", object F1 ",
          gold.object.f1());
  CHECK(gold.upos_accuracy() > 0.90);
  CHECK(gold.subject.f1() > 0.80);
  CHECK(gold.object.f1() > 0.65);
  // Every gold subject/object is a tp or an fn; every predicted one a tp or an fp.
  std::size_t gold_subjects = 0, gold_objects = 0;
  for (const auto& s : dev)
    for (const auto& w : s.words) {
      gold_subjects += w.deprel == "nsubj" || w.deprel == "nsubj:pass";
      gold_objects += w.deprel == "obj";
    }
  CHECK(gold.subject.tp + gold.subject.fn == gold_subjects);
  CHECK(gold.object.tp + gold.object.fn == gold_objects);

  const auto raw = darkbert::evaluate_annotator_raw(a, dev, "dev");
  MESSAGE("small model, raw text: words matched ", raw.matched_words, " of ", raw.gold_words, " (predicted ",
          raw.predicted_words, "), UPOS F1 ", raw.upos.f1(), ", subject/object F1 ", raw.subject_object().f1());
  CHECK(raw.gold_words == 25147);
  CHECK(raw.matched_words > 0.97 * 25147);
  CHECK(raw.upos.f1() > 0.88);
  CHECK(raw.upos.f1() < gold.upos.f1());
  CHECK(raw.subject.tp + raw.subject.fn == gold_subjects);
}

TEST_CASE("save and load: same predictions, same file") {
  const auto& a = darkbert::test::small_annotator();
  const auto text = saved(a);
  CHECK(text.rfind("darkbert-annotator 1\nprovenance trained on ewt-train[:2000] (2000 sentences", 0) == 0);
  std::istringstream in(text);
  const auto b = darkbert::Annotator::load(in, "model.txt");
  CHECK(b.provenance() == a.provenance());
  for (std::size_t s = 0; s < 300; ++s) {
    std::vector<std::string> forms;
    for (const auto& w : darkbert::test::ewt_dev()[s].words) forms.push_back(w.form);
    const auto pa = a.predict(forms), pb = b.predict(forms);
    CHECK(pa.upos == pb.upos);
    CHECK(pa.roles == pb.roles);
  }
  CHECK(saved(b) == text);
  // Through a file, written atomically.
  const auto dir = darkbert::test::scratch_dir("data_annotator_save");
  a.save(dir / "sub" / "model.txt");
  CHECK(darkbert::Annotator::load(dir / "sub" / "model.txt").provenance() == a.provenance());
  for (const auto& entry : fs::directory_iterator(dir / "sub")) CHECK(entry.path().filename() == "model.txt");
}

TEST_CASE("annotate raw text: words with spans and the six features") {
  const auto& a = darkbert::test::small_annotator();
  const std::string text = "The committee didn't approve the plan, and nobody asked them.";
  const auto words = a.annotate(text);
  std::string forms;
  for (const auto& w : words) {
    forms += w.form + " ";
    CHECK(text.substr(w.span.begin, w.span.end - w.span.begin) == w.form);
  }
  CHECK(forms == "The committee did n't approve the plan , and nobody asked them . ");
  auto find = [&](const std::string& f) {
    for (const auto& w : words)
      if (w.form == f) return w;
    FAIL("no word ", f);
    return darkbert::AnnotatedWord{};
  };
  CHECK(find("committee").is_noun());
  CHECK(find("committee").is_subject());
  CHECK(find("approve").is_verb());
  CHECK(find("plan").is_object());
  CHECK(find("n't").negation);
  CHECK(find("nobody").negation);
  CHECK(find("nobody").has(darkbert::LinguisticFeature::negation));
  CHECK(find("them").is_pronoun());
  CHECK_FALSE(find("did").is_verb());  // an auxiliary
  CHECK(darkbert::to_string(darkbert::LinguisticFeature::object) == "object");
  CHECK(a.annotate("").empty());
}

TEST_CASE("annotate_conllu changes UPOS and DEPREL only") {
  const auto& a = darkbert::test::small_annotator();
  const auto& dev = darkbert::test::ewt_dev();
  for (std::size_t k = 0; k < 50; ++k) {
    const auto& s = dev[k];
    const auto out = a.annotate_conllu(s);
    CHECK(out.comments == s.comments);
    CHECK(out.multiword_tokens.size() == s.multiword_tokens.size());
    CHECK(out.empty_nodes.size() == s.empty_nodes.size());
    REQUIRE(out.words.size() == s.words.size());
    for (std::size_t i = 0; i < s.words.size(); ++i) {
      const auto& w = out.words[i];
      CHECK(w.form == s.words[i].form);
      CHECK(w.lemma == s.words[i].lemma);
      CHECK(w.head == s.words[i].head);
      CHECK(w.misc == s.words[i].misc);
      CHECK((w.deprel == "_" || w.deprel == "nsubj" || w.deprel == "nsubj:pass" || w.deprel == "obj"));
      CHECK(a.tagger().first_pass().model().class_index(w.upos) >= 0);
    }
  }
}

TEST_CASE("default_annotator loads the cached model; without cache or data it says what is missing") {
  const auto dir = darkbert::test::scratch_dir("data_annotator_default");
  const auto root = darkbert::DataRoot::single(dir / "no-data", dir / "cache");
  CHECK(darkbert::default_annotator_path(root) == dir / "cache" / "models" / "annotator-en_ewt-v1.txt");
  const auto msg = message_of([&] { darkbert::default_annotator(root, nullptr); });
  CHECK(msg.find("ud/en_ewt-ud-train.conllu") != std::string::npos);
  CHECK(msg.find("download.sh ud") != std::string::npos);
  darkbert::test::small_annotator().save(darkbert::default_annotator_path(root));
  CHECK(darkbert::default_annotator(root, nullptr).provenance() == darkbert::test::small_annotator().provenance());
}

TEST_CASE("broken model files: errors name the file and line") {
  const auto text = saved(darkbert::test::small_annotator());
  auto load = [](const std::string& t) {
    std::istringstream in(t);
    return darkbert::Annotator::load(in, "m.txt");
  };
  CHECK(message_of([&] { load("hello\n"); }).find("m.txt:1: not a darkbert annotator file") != std::string::npos);
  CHECK(message_of([&] { load("darkbert-annotator 2\n"); }).find("m.txt:1: unsupported annotator format") !=
        std::string::npos);
  CHECK(message_of([&] { load("darkbert-annotator 1\nprovenance x\nlexicon z\n"); }).find("m.txt:3: expected 'lexicon <N>'") !=
        std::string::npos);
  // Truncated in the middle of the first perceptron.
  std::size_t cut = text.find("features ");
  cut = text.find('\n', cut) + 1;
  for (int k = 0; k < 10; ++k) cut = text.find('\n', cut) + 1;
  const auto truncated = message_of([&] { load(text.substr(0, cut)); });
  CHECK(truncated.find("m.txt:") != std::string::npos);
  CHECK(truncated.find("unexpected end of file") != std::string::npos);
  // A corrupted weight.
  std::string corrupt = text;
  const auto pos = corrupt.find(':', corrupt.find('\t', corrupt.find("features ")));
  corrupt[pos] = '#';
  const auto bad = message_of([&] { load(corrupt); });
  CHECK(bad.find("bad weight entry") != std::string::npos);
  std::size_t line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += corrupt[i] == '\n';
  CHECK(bad.find("m.txt:" + std::to_string(line) + ":") != std::string::npos);
  CHECK(message_of([] { darkbert::Annotator::load(fs::path("/nonexistent/model.txt")); }).find("/nonexistent/model.txt") !=
        std::string::npos);
}

TEST_CASE("huge counts in a model file are named errors, never an allocation the file asks for") {
  const auto text = saved(darkbert::test::small_annotator());
  auto load = [](const std::string& t) {
    std::istringstream in(t);
    return darkbert::Annotator::load(in, "m.txt");
  };
  auto line_of = [](const std::string& t, std::size_t pos) {
    std::size_t line = 1;
    for (std::size_t i = 0; i < pos; ++i) line += t[i] == '\n';
    return line;
  };
  // The lexicon count: checked against Annotator::max_lexicon_entries before any line is read.
  std::string lexicon = text;
  const auto lex = lexicon.find("\nlexicon ") + 1;
  lexicon.replace(lex, lexicon.find('\n', lex) - lex, "lexicon 18446744073709551615");
  const auto lex_msg = message_of([&] { load(lexicon); });
  CHECK(lex_msg.find("m.txt:3: lexicon count 18446744073709551615 exceeds the limit of 16777216") != std::string::npos);
  CHECK(lex_msg.find("max_lexicon_entries") != std::string::npos);

  // A perceptron's feature count: this used to end in std::bad_alloc (count x classes floats up front).
  const auto features = text.find("\nfeatures ") + 1;
  const auto features_end = text.find('\n', features);
  for (const char* count : {"18446744073709551615", "4000000000"}) {
    CAPTURE(count);
    std::string huge = text;
    huge.replace(features, features_end - features, std::string("features ") + count);
    const auto msg = message_of([&] { load(huge); });
    CHECK(msg.find("m.txt:" + std::to_string(line_of(huge, features)) + ": feature count " + count +
                   " exceeds the limit of 67108864 (AveragedPerceptron::max_features)") != std::string::npos);
  }
  // Under the limit but larger than the file: nothing is reserved from it, reading stops at the first line
  // that is not a feature (the next section's header).
  std::string longer = text;
  longer.replace(features, features_end - features, "features 60000000");
  const auto longer_msg = message_of([&] { load(longer); });
  CHECK(longer_msg.rfind("m.txt:", 0) == 0);
  CHECK((longer_msg.find("expected '<feature>") != std::string::npos ||
         longer_msg.find("bad weight entry") != std::string::npos ||
         longer_msg.find("unexpected end of file") != std::string::npos));
}

TEST_CASE("a 50 MB one-sentence CoNLL-U file and 50 MB texts: refused by a named limit, fast") {
  using clock = std::chrono::steady_clock;
  const auto dir = darkbert::test::scratch_dir("data_annotator_huge");
  const auto file = dir / "huge.conllu";
  {
    std::ofstream out(file, std::ios::binary);
    out << "# text = one very long sentence\n";
    std::size_t bytes = 0;
    for (std::size_t id = 1; bytes < 50'000'000; ++id) {
      const std::string line = std::to_string(id) + "\tword\t_\tNOUN\t_\t_\t0\troot\t_\t_\n";
      out << line;
      bytes += line.size();
    }
  }
  REQUIRE(fs::file_size(file) >= 50'000'000);
  auto start = clock::now();
  const auto msg = message_of([&] { darkbert::read_conllu(file); });
  // Word 10,001 is on line 10,002 (after the comment).
  CHECK(msg.find(file.string() + ":10002: the sentence starting at line 1 has more than 10000 word lines") !=
        std::string::npos);
  CHECK(msg.find("max_conllu_sentence_lines") != std::string::npos);
  CHECK(std::chrono::duration<double>(clock::now() - start).count() < 10);

  // The annotator itself refuses such a sentence, however it was built.
  const auto& a = darkbert::test::small_annotator();
  darkbert::ConlluSentence sentence;
  sentence.line = 7;
  sentence.sent_id = "big";
  sentence.words.resize(darkbert::max_sentence_words + 1);
  for (std::size_t i = 0; i < sentence.words.size(); ++i) {
    sentence.words[i].id = static_cast<int>(i) + 1;
    sentence.words[i].form = "word";
  }
  CHECK(message_of([&] { a.annotate_conllu(sentence); }) ==
        "Annotator: the sentence at line 7 (sent_id big) has 10001 words, more than the limit of 10000 "
        "(darkbert::max_sentence_words)");
  std::vector<std::string> forms(darkbert::max_sentence_words + 1, "word");
  CHECK(message_of([&] { a.predict(forms); }).find("a sentence of 10001 words exceeds the limit of 10000") !=
        std::string::npos);

  // Raw text: 50 MB of words, of opening brackets (peeled one at a time), of alternating trailing marks
  // (each once an O(n) abbreviation test): all stop at the word limit instead of running for minutes.
  const std::size_t big = 50'000'000;
  std::string words;
  words.reserve(big);
  while (words.size() < big) words += "word ";
  std::string brackets(big, '(');
  std::string marks = "x";
  marks.reserve(big);
  while (marks.size() < big) marks += ".,";
  for (const std::string* text : {&words, &brackets, &marks}) {
    start = clock::now();
    const auto m = message_of([&] { a.annotate(*text); });
    CHECK(m.find("tokenize_words: the text (") != std::string::npos);
    CHECK(m.find("has more than 10000 words (limit darkbert::max_sentence_words)") != std::string::npos);
    CHECK(std::chrono::duration<double>(clock::now() - start).count() < 10);
  }
  // At the limit is fine; one more word is refused.
  std::string at_limit;
  for (std::size_t i = 0; i < darkbert::max_sentence_words; ++i) at_limit += "a ";
  CHECK(darkbert::tokenize_words(at_limit).size() == darkbert::max_sentence_words);
  CHECK(message_of([&] { darkbert::tokenize_words(at_limit + "b"); }).find("more than 10000 words") !=
        std::string::npos);

  // One huge word is annotated in linear time: the tagger's features see its first and last 128 bytes.
  const std::string huge_word(4'000'000, 'a');
  start = clock::now();
  const auto annotated = a.annotate(huge_word + " sleeps .");
  CHECK(std::chrono::duration<double>(clock::now() - start).count() < 10);
  REQUIRE(annotated.size() == 3);
  CHECK(annotated[0].form.size() == huge_word.size());
  const std::string clipped(256, 'a');
  CHECK(a.predict({huge_word, "sleeps", "."}).upos == a.predict({clipped, "sleeps", "."}).upos);
  // Clipping keeps whole UTF-8 characters.
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xC3\xA9";  // é x 200 = 400 bytes
  const auto cut = darkbert::detail::clip_word(accents, 255);
  CHECK(cut.size() == 252);
  CHECK(cut == accents.substr(0, 252));
}
