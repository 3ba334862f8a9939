// Subject/object labeller: class mapping, a small model on EWT dev with gold tags, a clear example, errors.
#include <doctest/doctest.h>

#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/data/subject_object.hpp"
#include "test_data_fixtures.hpp"

using darkbert::test::message_of;

TEST_CASE("UD relations map to the four classes") {
  CHECK(darkbert::subject_object_class("nsubj") == "nsubj");
  CHECK(darkbert::subject_object_class("nsubj:pass") == "nsubj:pass");
  CHECK(darkbert::subject_object_class("obj") == "obj");
  for (const char* d : {"iobj", "obl", "nsubj:outer", "csubj", "root", "_", ""})
    CHECK(darkbert::subject_object_class(d) == "_");
  CHECK(darkbert::subject_object_classes() == std::vector<std::string>{"_", "nsubj", "nsubj:pass", "obj"});
}

TEST_CASE("the fixture's labeller on EWT dev with gold UPOS; a clear sentence") {
  const auto& labeller = darkbert::test::small_annotator().labeller();
  darkbert::PrfCounts subj, obj;
  for (const auto& s : darkbert::test::ewt_dev()) {
    std::vector<std::string> w, t;
    for (const auto& x : s.words) {
      w.push_back(x.form);
      t.push_back(x.upos);
    }
    const auto p = labeller.label(w, t);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const auto g = darkbert::subject_object_class(s.words[i].deprel);
      const bool gs = g == "nsubj" || g == "nsubj:pass", ps = p[i] == "nsubj" || p[i] == "nsubj:pass";
      subj.tp += gs && ps;
      subj.fp += !gs && ps;
      subj.fn += gs && !ps;
      obj.tp += g == "obj" && p[i] == "obj";
      obj.fp += g != "obj" && p[i] == "obj";
      obj.fn += g == "obj" && p[i] != "obj";
    }
  }
  MESSAGE("2000 training sentences, gold UPOS: subject F1 ", subj.f1(), ", object F1 ", obj.f1());
  CHECK(subj.f1() > 0.80);
  CHECK(obj.f1() > 0.65);
  const auto p = labeller.label({"The", "dog", "chased", "a", "cat", "."}, {"DET", "NOUN", "VERB", "DET", "NOUN", "PUNCT"});
  CHECK(p == std::vector<std::string>{"_", "nsubj", "_", "_", "obj", "_"});
  const auto q = labeller.label({"The", "cake", "was", "eaten", "."}, {"DET", "NOUN", "AUX", "VERB", "PUNCT"});
  CHECK((q[1] == "nsubj" || q[1] == "nsubj:pass"));
  CHECK(q[3] == "_");
}

TEST_CASE("input errors") {
  CHECK(message_of([] { darkbert::SubjectObjectLabeller::train({{"a"}}, {{"X"}}, {{"subj"}}); }).find("unknown class 'subj'") !=
        std::string::npos);
  CHECK(message_of([] { darkbert::SubjectObjectLabeller::train({{"a"}}, {{"X", "Y"}}, {{"_"}}); }).find("1 words, 2 tags") !=
        std::string::npos);
  CHECK(message_of([] { darkbert::test::small_annotator().labeller().label({"a"}, {}); }).find("1 words but 0 tags") !=
        std::string::npos);
}
