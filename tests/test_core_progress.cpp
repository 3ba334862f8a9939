// The progress bar in a log (stderr not a terminal): a plain line at each 10% of the loop, and a new
// estimate of the loop's length continues the same bar instead of starting another at zero.
#include <doctest/doctest.h>
#include <unistd.h>  // dup, dup2, close

#include <cstdio>  // std::tmpfile
#include <string>  // std::string

#include "darkbert/core/progress.hpp"

namespace {

// What `f` writes to stderr.
template <class F>
std::string stderr_of(F f) {
  std::fflush(stderr);
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  const int saved = ::dup(2);
  ::dup2(::fileno(file), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  return text;
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("a progress bar in a log prints one line per tenth of the loop and one at the end") {
  const auto text = stderr_of([] {
    darkbert::Progress progress("scan", 20);
    for (int i = 0; i < 20; ++i) progress.advance();
  });
  CHECK(lines(text) == 11);
  CHECK(text.find("scan [###############...............] 10/20  50.0%") != std::string::npos);
  CHECK(text.find("20/20 100.0%") != std::string::npos);
}

TEST_CASE("a new estimate of the length continues the bar: steps done and deciles carry over") {
  const auto text = stderr_of([] {
    darkbert::Progress progress("pretrain", 10);
    for (int i = 0; i < 5; ++i) progress.advance();
    progress.set_total(20);  // 5 of 20 done: the next line is due at 30%
    CHECK(progress.done() == 5);
    progress.advance();
    progress.advance();
  });
  CHECK(text.find("5/10  50.0%") != std::string::npos);
  CHECK(text.find("6/20  30.0%") != std::string::npos);
  CHECK(text.find("7/20") != std::string::npos);  // the final line, from the destructor
  CHECK(text.find(" 0/") == std::string::npos);   // no bar restarted at zero
  CHECK(lines(text) == 5 + 1 + 1);
}

TEST_CASE("a disabled progress bar prints nothing") {
  CHECK(stderr_of([] {
          darkbert::Progress progress("quiet", 4, false);
          for (int i = 0; i < 4; ++i) progress.advance();
        }).empty());
}
