// Annotator: scores of the small fixture model on all of UD EWT dev (gold words and raw text), save/load
// round trip, annotate() on raw text, annotate_conllu keeping everything but UPOS/DEPREL, the cached
// default model, and broken model files.
#include <doctest/doctest.h>

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
