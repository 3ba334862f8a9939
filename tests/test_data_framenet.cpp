// FrameNet reader and the paper's selection: the sample in ../shared/data (all of it), a hand-made release
// (character offsets, discontinuous targets, null instantiation, second FE layers), archives unpacked into
// the cache, and broken XML. The full-release scan is examples/framenet_selection.cpp, not a unit test.
#include <doctest/doctest.h>

#include <cstdlib>     // std::system
#include <filesystem>  // std::filesystem
#include <set>         // std::set
#include <string>      // std::string

#include "darkbert/data/framenet.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;
using darkbert::test::write_file;

namespace {

const char* frame_xml = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<frame name="Ingestion" ID="7" xmlns="http://framenet.icsi.berkeley.edu">
    <definition>eat</definition>
    <FE coreType="Core" abbrev="Ing" name="Ingestor" ID="70"/>
    <FE coreType="Core" abbrev="Ingestibles" name="Ingestibles" ID="71"/>
    <FE coreType="Peripheral" abbrev="Pla" name="Place" ID="72"/>
    <FE coreType="Core-Unexpressed" abbrev="Src" name="Source" ID="73"/>
</frame>
)";

// Sentence 1: "Zoë quickly ate the crème brûlée ." (non-ASCII before and inside spans; offsets in characters,
// end inclusive). Sentence 2: discontinuous target "wolfed ... down", a null-instantiated FE, an FE layer of
// rank 2, and an adjacent core element (distance 1). Sentence 3 has no Target layer (POS only).
const char* lu_xml = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<lexUnit name="eat.v" ID="42" POS="V" frame="Ingestion" frameID="7" status="Finished_Initial" xmlns="http://framenet.icsi.berkeley.edu">
    <subCorpus name="V-all">
        <sentence ID="1001">
            <text>Zoë quickly ate the crème brûlée .</text>
            <annotationSet status="MANUAL" ID="5001">
                <layer rank="1" name="FE">
                    <label feID="70" end="2" start="0" name="Ingestor"/>
                    <label feID="71" end="31" start="16" name="Ingestibles"/>
                    <label feID="72" itype="INI" name="Place"/>
                </layer>
                <layer rank="1" name="Target">
                    <label end="14" start="12" name="Target"/>
                </layer>
            </annotationSet>
        </sentence>
        <sentence ID="1002">
            <text>He wolfed it down .</text>
            <annotationSet status="MANUAL" ID="5002">
                <layer rank="1" name="FE">
                    <label feID="70" end="1" start="0" name="Ingestor"/>
                    <label feID="71" end="11" start="10" name="Ingestibles"/>
                    <label feID="73" itype="DNI" name="Source"/>
                </layer>
                <layer rank="2" name="FE">
                    <label feID="72" end="16" start="13" name="Place"/>
                </layer>
                <layer rank="1" name="Target">
                    <label end="8" start="3" name="Target"/>
                    <label end="16" start="13" name="Target"/>
                </layer>
            </annotationSet>
        </sentence>
        <sentence ID="1003">
            <text>Nothing here .</text>
            <annotationSet status="UNANN" ID="5003">
                <layer rank="1" name="BNC"><label end="6" start="0" name="PNI"/></layer>
            </annotationSet>
        </sentence>
    </subCorpus>
</lexUnit>
)";

fs::path make_release(const fs::path& dir) {
  write_file(dir / "frame" / "Ingestion.xml", frame_xml);
  write_file(dir / "lu" / "lu42.xml", lu_xml);
  return dir;
}

}  // namespace

TEST_CASE("hand-made release: spans in bytes, discontinuous targets, null instantiation, FE layers") {
  const auto dir = make_release(darkbert::test::scratch_dir("data_framenet_small") / "fndata-1.7");
  darkbert::FrameNet fn(dir);
  REQUIRE(fn.frame_count() == 1);
  const auto& frame = fn.frame("Ingestion");
  CHECK(frame.id == 7);
  REQUIRE(frame.elements.size() == 4);
  CHECK(frame.element("Ingestor")->is_core());
  CHECK(frame.element("Source")->is_core());  // Core-Unexpressed counts as core
  CHECK_FALSE(frame.element("Place")->is_core());
  CHECK(frame.element("Place")->core_type == darkbert::CoreType::peripheral);

  const auto lu = darkbert::read_lexical_unit_file(dir / "lu" / "lu42.xml");
  CHECK(lu.name == "eat.v");
  CHECK(lu.frame == "Ingestion");
  REQUIRE(lu.sentences.size() == 3);
  const auto& s1 = lu.sentences[0];
  REQUIRE(s1.annotations.size() == 1);
  const auto& a1 = s1.annotations[0];
  auto text_of = [&](const std::string& text, darkbert::Span sp) { return text.substr(sp.begin, sp.end - sp.begin); };
  REQUIRE(a1.target.size() == 1);
  CHECK(text_of(s1.text, a1.target[0]) == "ate");
  REQUIRE(a1.elements.size() == 3);
  CHECK(text_of(s1.text, a1.elements[0].span) == "Zoë");
  CHECK(text_of(s1.text, a1.elements[1].span) == "the crème brûlée");
  CHECK_FALSE(a1.elements[2].overt());
  CHECK(a1.elements[2].null_instantiation == "INI");
  const auto& a2 = lu.sentences[1].annotations[0];
  REQUIRE(a2.target.size() == 2);
  CHECK(text_of(lu.sentences[1].text, a2.target[1]) == "down");
  CHECK(a2.elements[3].layer_rank == 2);
  CHECK(lu.sentences[2].annotations.empty());

  // Selection. Sentence 1: "Zoë" (token 0) is 2 tokens from the target "ate" (token 2), but the Ingestibles
  // start right after it (distance 1), so min_distance 2 rejects it and min_distance 1 accepts it.
  auto picked = darkbert::select_framenet_examples(fn);
  CHECK(picked.empty());
  darkbert::FrameNetSelectionOptions loose;
  loose.min_distance = 1;
  picked = darkbert::select_framenet_examples(fn, loose);
  REQUIRE(picked.size() == 2);
  CHECK(picked[0].sentence_id == 1001);
  CHECK(picked[0].target_tokens == std::vector<std::size_t>{2});
  REQUIRE(picked[0].core_elements.size() == 2);
  CHECK(picked[0].core_elements[0].distance == 2);
  CHECK(picked[0].core_elements[1].tokens == std::vector<std::size_t>{3, 4, 5});
  CHECK(picked[0].core_elements[1].distance == 1);
  // Sentence 2: discontinuous target (tokens 1 and 3); "it" (token 2) is adjacent to both parts;
  // the rank-2 layer and the null-instantiated Source are not links.
  CHECK(picked[1].target_tokens == std::vector<std::size_t>{1, 3});
  REQUIRE(picked[1].core_elements.size() == 2);
  CHECK(picked[1].core_elements[1].element == "Ingestibles");
  CHECK(picked[1].core_elements[1].distance == 1);
  // Each limit excludes what it should.
  auto opts = loose;
  opts.max_tokens = 6;  // sentence 1 has 7 tokens
  CHECK(darkbert::select_framenet_examples(fn, opts).size() == 1);
  opts = loose;
  opts.max_core_elements = 1;
  CHECK(darkbert::select_framenet_examples(fn, opts).empty());
  opts = loose;
  opts.max_element_tokens = 2;  // "the crème brûlée" is 3 tokens
  CHECK(darkbert::select_framenet_examples(fn, opts).size() == 1);
}

TEST_CASE("the sample in ../shared/data: counts of its README, every span valid, the paper's selection") {
  const auto root = darkbert::DataRoot::single(darkbert::test::data_dir(), "/nonexistent-cache");
  darkbert::FrameNet fn(darkbert::framenet_sample_dir(root));
  CHECK(fn.lexical_unit_files().size() == 200);
  CHECK(fn.frame_count() == 131);
  std::size_t elements = 0, core = 0;
  for (const auto& [name, f] : fn.frames()) {
    elements += f.elements.size();
    for (const auto& e : f.elements) core += e.core_type == darkbert::CoreType::core;
  }
  CHECK(elements == 1376);
  CHECK(core == 387);

  std::size_t sentences = 0, sets = 0, verbs = 0, nouns = 0, adjectives = 0, bad_spans = 0;
  bool found_accented = false;
  fn.for_each_lexical_unit([&](const darkbert::LexicalUnit& lu) {
    CHECK(fn.find_frame(lu.frame) != nullptr);
    verbs += lu.pos == "V";
    nouns += lu.pos == "N";
    adjectives += lu.pos == "A";
    sentences += lu.sentences.size();
    for (const auto& s : lu.sentences) {
      sets += s.annotations.size();
      auto check_span = [&](darkbert::Span sp) {
        const bool ok = sp.begin < sp.end && sp.end <= s.text.size() &&
                        (static_cast<unsigned char>(s.text[sp.begin]) & 0xC0) != 0x80 &&
                        (sp.end == s.text.size() || (static_cast<unsigned char>(s.text[sp.end]) & 0xC0) != 0x80);
        bad_spans += !ok;
      };
      for (const auto& a : s.annotations) {
        for (const auto& t : a.target) check_span(t);
        for (const auto& e : a.elements) {
          if (!e.overt()) continue;
          check_span(e.span);
          found_accented = found_accented || s.text.substr(e.span.begin, e.span.end - e.span.begin) ==
                                                 "Crème Fraîche in orange or raspberry";
        }
      }
    }
  });
  CHECK(verbs == 79);
  CHECK(nouns == 78);
  CHECK(adjectives == 43);
  CHECK(sentences == 1125);
  CHECK(sets == 1125);
  CHECK(bad_spans == 0);
  CHECK(found_accented);

  // 36 annotation sets (also found by an independent Python implementation of the same rule).
  const auto picked = darkbert::select_framenet_examples(fn);
  CHECK(picked.size() == 36);
  for (const auto& ex : picked) {
    CHECK(ex.tokens.size() <= 12);
    CHECK(!ex.core_elements.empty());
    CHECK(ex.core_elements.size() <= 3);
    for (const auto& l : ex.core_elements) {
      CHECK(l.distance >= 2);
      CHECK(fn.frame(ex.frame).element(l.element)->is_core());
    }
  }
  darkbert::FrameNetSelectionOptions short_elements;
  short_elements.max_element_tokens = 3;
  CHECK(darkbert::select_framenet_examples(fn, short_elements).size() == 34);  // Python: 34
}

TEST_CASE("full release location: unpacked folder, else an archive unpacked into the cache once") {
  const auto dir = darkbert::test::scratch_dir("data_framenet_release");
  const auto data = dir / "data";
  make_release(dir / "src" / "fndata-1.7");
  fs::create_directories(data / "framenet");
  const std::string cmd = "tar -cJf '" + (data / "framenet" / "fndata-1.7.tar.xz").string() + "' -C '" +
                          (dir / "src").string() + "' fndata-1.7";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto root = darkbert::DataRoot::single(data, dir / "cache");
  const auto release = darkbert::framenet_release_dir(root, nullptr);
  CHECK(release == dir / "cache" / "framenet" / "fndata-1.7" / "fndata-1.7");
  CHECK(darkbert::FrameNet(release).lexical_unit_files().size() == 1);
  CHECK(darkbert::framenet_release_dir(root, nullptr) == release);  // reused, not unpacked again

  // An unpacked folder in the data root wins over the archive.
  make_release(data / "framenet" / "fndata-1.7");
  CHECK(darkbert::framenet_release_dir(root, nullptr) == data / "framenet" / "fndata-1.7");

  const auto empty = darkbert::DataRoot::single(dir / "nothing", dir / "cache");
  const auto msg = message_of([&] { darkbert::framenet_release_dir(empty, nullptr); });
  CHECK(msg.find("FrameNet full release") != std::string::npos);
  CHECK(msg.find("download.sh framenet") != std::string::npos);
}

TEST_CASE("broken FrameNet XML: errors name the file and line") {
  const auto dir = darkbert::test::scratch_dir("data_framenet_broken");
  std::string truncated = lu_xml;
  truncated.resize(truncated.find("<sentence ID=\"1002\">"));
  auto msg = message_of([&] { darkbert::read_lexical_unit_file(write_file(dir / "lu1.xml", truncated)); });
  CHECK(msg.find("lu1.xml:") != std::string::npos);
  CHECK(msg.find("XML error") != std::string::npos);

  std::string outside = lu_xml;
  outside.replace(outside.find("end=\"31\""), 8, "end=\"99\"");
  msg = message_of([&] { darkbert::read_lexical_unit_file(write_file(dir / "lu2.xml", outside)); });
  CHECK(msg.find("lu2.xml:9:") != std::string::npos);
  CHECK(msg.find("label 'Ingestibles' [16, 99] does not fit sentence 1001") != std::string::npos);

  std::string not_int = lu_xml;
  not_int.replace(not_int.find("start=\"12\""), 10, "start=\"x\"");
  msg = message_of([&] { darkbert::read_lexical_unit_file(write_file(dir / "lu3.xml", not_int)); });
  CHECK(msg.find("lu3.xml:13:") != std::string::npos);
  CHECK(msg.find("start=\"x\" is not an integer") != std::string::npos);

  std::string no_core = frame_xml;
  no_core.replace(no_core.find("coreType=\"Peripheral\" "), 22, "");
  msg = message_of([&] { darkbert::read_frame_file(write_file(dir / "Frame.xml", no_core)); });
  CHECK(msg.find("Frame.xml:6:") != std::string::npos);
  CHECK(msg.find("no coreType") != std::string::npos);

  msg = message_of([&] { darkbert::read_frame_file(write_file(dir / "wrong.xml", "<?xml version=\"1.0\"?><x/>")); });
  CHECK(msg.find("wrong.xml: not a FrameNet frame file") != std::string::npos);

  // A lexical unit whose frame file is missing.
  const auto release = dir / "release";
  write_file(release / "lu" / "lu42.xml", lu_xml);
  fs::create_directories(release / "frame");
  darkbert::FrameNet fn(release);
  msg = message_of([&] { darkbert::select_framenet_examples(fn); });
  CHECK(msg.find("lu42.xml") != std::string::npos);
  CHECK(msg.find("Ingestion.xml does not exist") != std::string::npos);

  msg = message_of([&] { darkbert::FrameNet bad(dir / "nowhere"); });
  CHECK(msg.find("not a FrameNet release folder") != std::string::npos);
}
