// Fuzz target: a FrameNet release folder of one frame file and one lexical-unit file (joined by
// fuzz_support's separator), read and run through the paper's sentence selection.
#include "darkbert/data/framenet.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("framenet");
  const auto files = fuzz::split_files(data, size, 2);
  std::filesystem::create_directories(dir / "frame");
  std::filesystem::create_directories(dir / "lu");
  fuzz::put(dir / "frame" / "Frame.xml", files[0]);
  fuzz::put(dir / "lu" / "lu1.xml", files[1]);
  const LexicalUnit lu = read_lexical_unit_file(dir / "lu" / "lu1.xml");
  for (const auto& s : lu.sentences)
    for (const auto& set : s.annotations) {
      for (const auto& e : set.elements)
        fuzz::check(e.span.begin <= e.span.end && e.span.end <= s.text.size(), "element spans inside the text");
      for (const auto& t : set.target)
        fuzz::check(t.begin <= t.end && t.end <= s.text.size(), "target spans inside the text");
    }
  const FrameNet fn(dir);
  for (const auto& ex : select_framenet_examples(fn, {}))
    fuzz::check(!ex.core_elements.empty() && !ex.target_tokens.empty(), "a selected sentence has a target and links");
}
