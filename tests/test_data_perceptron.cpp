// Averaged perceptron: learning, the averaging formula, save/load round trip and load errors.
#include <doctest/doctest.h>

#include <sstream>  // std::istringstream, std::ostringstream
#include <string>   // std::string
#include <vector>   // std::vector

#include "darkbert/data/perceptron.hpp"
#include "test_support.hpp"

using darkbert::test::message_of;

namespace {

darkbert::AveragedPerceptron load_text(const std::string& text) {
  std::istringstream in(text);
  darkbert::detail::LineReader r(in, "model.txt");
  return darkbert::AveragedPerceptron::load(r);
}

}  // namespace

TEST_CASE("averaging: weights are averaged over every instance") {
  darkbert::AveragedPerceptron p({"A", "B"});
  const std::vector<int> f = {p.intern("f")};
  p.update(f, 0, 1);  // instance 0: w = (1, -1)
  p.tick();
  p.tick();           // instance 1: no update, w = (1, -1)
  p.update(f, 1, 0);  // instance 2: w = (0, 0)
  p.tick();
  p.finalize();
  // Mean of the weights after each instance: ((1,-1) + (1,-1) + (0,0)) / 3.
  std::ostringstream out;
  p.save(out);
  const auto q = load_text(out.str());
  std::vector<float> s;
  q.scores({q.lookup("f")}, s);
  CHECK(s[0] == doctest::Approx(2.0 / 3.0));
  CHECK(s[1] == doctest::Approx(-2.0 / 3.0));
}

TEST_CASE("learns a separable problem; unknown features are ignored; ties go to the first class") {
  // Class 0 is never a target, so every example is predicted wrong (a tie goes to class 0) and learned.
  darkbert::AveragedPerceptron p({"none", "low", "mid", "high"});
  const std::vector<std::vector<std::string>> x = {{"b", "small"}, {"b", "medium"}, {"b", "large"}, {"b", "tiny"}};
  const std::vector<int> y = {1, 2, 3, 1};
  for (int it = 0; it < 30; ++it)
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::vector<int> f;
      for (const auto& s : x[i]) f.push_back(p.intern(s));
      p.update(f, y[i], p.predict(f));
      p.tick();
    }
  p.finalize();
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<int> f;
    for (const auto& s : x[i]) f.push_back(p.lookup(s));
    CHECK(p.predict(f) == y[i]);
  }
  CHECK(p.lookup("never seen") == -1);
  CHECK(p.predict({-1}) == 0);
  CHECK(message_of([&] { p.intern("new"); }).find("after finalize") != std::string::npos);
}

TEST_CASE("save/load round trip keeps every weight and escapes feature names") {
  darkbert::AveragedPerceptron p({"x", "y"});
  const std::vector<int> f = {p.intern("tab\there"), p.intern("new\nline"), p.intern("back\\slash"), p.intern("w=é")};
  p.update(f, 1, 0);
  p.tick();
  p.update({f[0]}, 0, 1);
  p.tick();
  p.tick();
  p.finalize();
  std::ostringstream out;
  p.save(out);
  const auto q = load_text(out.str());
  for (const char* name : {"tab\there", "new\nline", "back\\slash", "w=é"}) {
    std::vector<float> a, b;
    p.scores({p.lookup(name)}, a);
    q.scores({q.lookup(name)}, b);
    CHECK(a == b);
  }
  std::ostringstream again;
  q.save(again);
  CHECK(again.str() == out.str());
}

TEST_CASE("load errors name the file and line") {
  const std::string good = "perceptron 1\nclasses 2\tA\tB\nfeatures 1\nf\t0:1 1:-1\n";
  CHECK(load_text(good).num_features() == 1);
  struct Case {
    std::string text, where, what;
  };
  const Case cases[] = {
      {"perceptron 2\n", "model.txt:1:", "expected 'perceptron 1'"},
      {"perceptron 1\nclasses 3\tA\tB\n", "model.txt:2:", "classes <C>"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures x\n", "model.txt:3:", "expected 'features <F>'"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 2\nf\t0:1\n", "model.txt:5:", "unexpected end of file"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 1\nf\t2:1\n", "model.txt:4:", "bad weight entry '2:1'"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 1\nf\t0:abc\n", "model.txt:4:", "bad weight 'abc'"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 1\nno tab here\n", "model.txt:4:", "expected '<feature>"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 2\nf\t0:1\nf\t1:1\n", "model.txt:5:", "feature 'f' appears twice"},
      {"perceptron 1\nclasses 2\tA\tB\nfeatures 1\nbad\\q\t0:1\n", "model.txt:4:", "bad escape"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto msg = message_of([&] { load_text(c.text); });
    CHECK(msg.find(c.where) != std::string::npos);
    CHECK(msg.find(c.what) != std::string::npos);
  }
}
