// Tests for include/darkbert/study/report.hpp: numbers registered and formatted (NaN, negative, percentages,
// counts, mean ± sd), keys given twice refused by name, each element rendered in Markdown (table escaping
// of `|`) and HTML (escaping of <&>"', figures from viz/heatmap.hpp and viz/line_chart.hpp embedded as data
// URIs, nothing outside the page referenced), the stated-number rule, and check_report() on a good folder
// and on each kind of planted defect.

#include <doctest/doctest.h>

#include <cmath>       // NAN, INFINITY
#include <cstdint>     // std::int64_t
#include <filesystem>  // std::filesystem::copy, remove, resize_file
#include <fstream>     // std::ofstream (planting defects)
#include <limits>      // std::numeric_limits
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/analysis/results.hpp"  // write_table (CSV, JSON and .npy of a head matrix)
#include "darkbert/study/report.hpp"
#include "darkbert/viz/heatmap.hpp"
#include "darkbert/viz/line_chart.hpp"
#include "test_support.hpp"

using darkbert::test::read_bytes;

namespace fs = std::filesystem;
namespace study = darkbert::study;
using darkbert::test::message_of;

namespace {

void append(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::app | std::ios::binary) << text; }

void replace_in(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = read_bytes(path);
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, path.string(), " has no '", from, "'");
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Real figures from the viz headers: a [2, 3] heatmap and a two-series line chart, each as PNG and SVG.
void write_figures(const fs::path& dir) {
  fs::create_directories(dir / "figures");
  const std::vector<double> scores = {0.1, 0.9, 0.5, 0.3, 0.7, 0.2};
  darkbert::HeatmapOptions h;
  h.title = "head scores";
  h.x = {"head", {}, 0};
  h.y = {"layer", {}, 0};
  h.value_label = "score";
  darkbert::write_heatmap(dir / "figures/heads.png", 2, 3, scores.data(), h);
  darkbert::write_heatmap(dir / "figures/heads.svg", 2, 3, scores.data(), h);
  const std::vector<darkbert::LineSeries> series = {{"accuracy", {0, 100, 200}, {0.1, 0.3, 0.4}},
                                                    {"loss", {0, 100, 200}, {2.0, 1.1, 0.9}}};
  const darkbert::LineChartOptions l{.title = "training", .x_label = "step", .y_label = "value"};
  darkbert::write_line_chart(dir / "figures/curve.png", series, l);
  darkbert::write_line_chart(dir / "figures/curve.svg", series, l);
}

// A complete report folder: figures, a head matrix as CSV/JSON/.npy, and the report that states numbers
// only through the registry.
void write_good_report(const fs::path& dir) {
  write_figures(dir);
  auto m = darkbert::make_head_matrix<double>("cosine", 2, 3);
  m(0, 1) = 0.91;
  darkbert::write_table(m, dir);

  study::Report r("Revealing the Dark Secrets of BERT, reproduced");
  r.paragraph("A study model of " + r.count("sizes.model.layers", 6) + " layers and " +
              r.count("sizes.pretraining_tokens", 12345678) + " pretraining tokens, published in 2019.");
  auto& s = r.section("§3.3 Change after fine-tuning");
  s.paragraph("Fine-tuning changes " + r.percent("fig5.MRPC.changed_share", 0.4375, 1) + " of the heads; Table 1 " +
              "and Figures 5 and 6 show a mean cosine of " + r.number("fig5.MRPC.mean_cosine", 0.81234567, 3) +
              " and a drop of " + r.number("fig5.MRPC.drop", -1.2345, 2) + ".");
  s.table({.header = {"task", "pretrained", "fine-tuned"},
           .rows = {{"MRPC", r.number("table1.MRPC.pretrained.accuracy.mean", 67.5347, 2),
                     r.mean_sd("table1.MRPC.finetuned.accuracy", {84.1, 86.2, 85.0}, 2)},
                    {"STS-B", r.number("table1.STS-B.pretrained.pearson", std::numeric_limits<double>::quiet_NaN(), 2),
                     r.mean_sd("table1.STS-B.finetuned.pearson", {0.871}, 3)}},
           .caption = "Table 1: dev metrics over " + r.count("sizes.seeds", 3) + " fine-tuning seeds."});
  s.figure({.png = "figures/heads.png", .svg = "figures/heads.svg", .caption = "Figure 5: cosine per head."});
  s.figure({.png = "figures/curve.png", .svg = "figures/curve.svg", .caption = "Training curve."});
  s.claim({.claim = "Fine-tuning changes the last two layers most.",
           .paper = "layers " + r.count("paper.fig5.most_changed.0", 11) + " and " + r.count("paper.fig5.most_changed.1", 12),
           .darkbert = "layers " + r.count("fig5.MRPC.most_changed.0", 5) + " and " + r.count("fig5.MRPC.most_changed.1", 6),
           .verdict = study::Verdict::reproduced,
           .reason = "The two most-changed layers are the last two."});
  s.claim({.claim = "Pretraining helps on MRPC.",
           .paper = r.number("paper.table1.MRPC.gain", 4.5, 1) + " points",
           .darkbert = r.number("table1.MRPC.gain", 0.8123, 1) + " points",
           .verdict = study::Verdict::partly,
           .reason = "The gain is within the spread over seeds."});
  s.file("cosine.csv", "one row per layer, one column per head");
  s.file("cosine.npy", "the same values, [layers, heads]");
  r.meta("model", {{"layers", 6}, {"heads", 8}, {"hidden", 128}});
  r.write(dir);
}

std::vector<study::ReportDefect> kinds_of(const std::vector<study::ReportProblem>& problems) {
  std::vector<study::ReportDefect> kinds;
  for (const auto& p : problems) kinds.push_back(p.kind);
  return kinds;
}

std::string messages_of(const std::vector<study::ReportProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += p.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("numbers are registered at full precision and returned as the text states them") {
  study::Report r("T");
  CHECK(r.number("table1.MRPC.pretrained.accuracy.mean", 67.5347, 2) == "67.53");
  CHECK(r.number("a.negative", -0.456, 2) == "-0.46");
  CHECK(r.number("a.rounds_to_zero", -0.001, 2) == "0.00");  // never "-0.00"
  CHECK(r.number("a.integer", 12.0, 0) == "12");
  CHECK(r.number("a.tie", 2.5, 0) == "2");  // rounded as printf rounds the binary value: ties to even
  CHECK(r.number("a.nan", NAN, 2) == "n/a");
  CHECK(r.number("a.inf", -INFINITY, 1) == "-inf");
  CHECK(r.percent("a.share", 0.1234, 1) == "12.3%");
  CHECK(r.percent("a.negative_share", -0.05, 0) == "-5%");
  CHECK(r.percent("a.nan_share", NAN, 1) == "n/a");
  CHECK(r.count("a.tokens", 1234567) == "1,234,567");
  CHECK(r.count("a.small", 999) == "999");
  CHECK(r.count("a.negative_count", -1234) == "-1,234");
  CHECK(r.mean_sd("a.acc", {0.84, 0.86, 0.85}, 3) == "0.850 \xC2\xB1 0.010");
  CHECK(r.mean_sd("a.one", {0.5}, 2) == "0.50");

  // summary.json keeps the values as given, nested by key path, and they survive the JSON text exactly.
  const auto n = nlohmann::json::parse(r.summary().dump())["numbers"];
  CHECK(n["table1"]["MRPC"]["pretrained"]["accuracy"]["mean"].get<double>() == 67.5347);
  CHECK(n["a"]["negative"].get<double>() == -0.456);
  CHECK(n["a"]["nan"] == "nan");
  CHECK(n["a"]["inf"] == "-inf");
  CHECK(n["a"]["share"].get<double>() == 0.1234);  // the fraction, not the percentage
  CHECK(n["a"]["tokens"].get<std::int64_t>() == 1234567);
  CHECK(n["a"]["acc"]["n"] == 3);
  CHECK(n["a"]["acc"]["values"] == nlohmann::json({0.84, 0.86, 0.85}));
  CHECK(n["a"]["acc"]["sd"].get<double>() == doctest::Approx(0.01).epsilon(1e-9));
  CHECK(n["a"]["one"]["sd"] == "nan");

  CHECK(message_of([&] { r.number("x", 1, 13); }) == "report: number 'x': 13 decimals is outside [0, 12]");
  CHECK(message_of([&] { r.mean_sd("x", {}, 2); }) == "report: number 'x': mean_sd of no values");
}

TEST_CASE("a key given twice, or running into another key, is refused by name") {
  study::Report r("T");
  r.number("table1.MRPC.mean", 1, 1);
  CHECK(message_of([&] { r.number("table1.MRPC.mean", 2, 1); }) == "report: number 'table1.MRPC.mean' is registered twice");
  CHECK(message_of([&] { r.count("table1.MRPC.mean.x", 2); }) ==
        "report: number 'table1.MRPC.mean.x' cannot be registered: 'table1.MRPC.mean' already holds a value");
  CHECK(message_of([&] { r.percent("table1.MRPC", 0.2, 1); }) ==
        "report: number 'table1.MRPC' cannot be registered: it already holds keys below it");
  CHECK(message_of([&] { r.mean_sd("table1.MRPC", {1.0, 2.0}, 1); }) == "report: number 'table1.MRPC.mean' is registered twice");
  CHECK(message_of([&] { r.number("a..b", 1, 1); }) == "report: number key 'a..b' has an empty segment");
  CHECK(message_of([&] { r.number("", 1, 1); }) == "report: a number key is empty");
  CHECK(message_of([&] { r.number("a b", 1, 1); }) == "report: number key 'a b' holds whitespace or a control character");
  r.meta("model.layers", 6);
  CHECK(message_of([&] { r.meta("model.layers", 7); }) == "report: meta 'model.layers' is registered twice");
  CHECK(r.numbers()["table1"]["MRPC"]["mean"].get<double>() == 1);  // the refused calls changed nothing
  CHECK(r.summary()["meta"]["model"]["layers"] == 6);
}

TEST_CASE("Markdown: headings, paragraphs, lists, tables, figures, claims and data files") {
  study::Report r("Dark <Secrets>");
  r.paragraph("Use `a|b` and **bold**: head_classes.csv *x* [CLS] <tag> |pipe| ~1 &amp;");
  auto& s = r.section("§3.3 Change");
  s.paragraph("# not a heading");
  s.paragraph("12. not a list");
  s.list({"one", "2. two"});
  s.table({.header = {"task", "accuracy"}, .rows = {{"MR|PC", "67.53"}, {"`x|y`", "-0.5"}, {"n/a", ""}}, .caption = "Table 1: scores"});
  s.figure({.png = "figures/h.png", .svg = "figures/h.svg", .caption = "Figure 5: heads [0, 1]"});
  s.figure({.svg = "figures/only.svg", .caption = "vector only"});
  s.claim({.claim = "The last layers change most.", .paper = "11-12", .darkbert = "5-6", .verdict = study::Verdict::partly,
           .reason = "Only on MRPC."});
  s.claim({.claim = "Claim two.", .paper = "", .darkbert = "none", .verdict = study::Verdict::not_testable, .reason = "No data."});
  s.file("head_classes.csv", "one row per head");
  s.section("Sub").paragraph("deeper");
  const std::string md = r.markdown();

  CHECK(md.rfind("# Dark \\<Secrets>\n\n", 0) == 0);
  CHECK(md.find("Use `a|b` and **bold**: head_classes.csv \\*x\\* [CLS] \\<tag> |pipe| \\~1 \\&amp;\n\n") != std::string::npos);
  CHECK(md.find("## §3.3 Change\n\n") != std::string::npos);
  CHECK(md.find("\n\\# not a heading\n") != std::string::npos);
  CHECK(md.find("\n12\\. not a list\n") != std::string::npos);
  CHECK(md.find("- one\n- 2\\. two\n\n") != std::string::npos);
  CHECK(md.find("Table 1: scores\n\n| task | accuracy |\n| --- | ---: |\n| MR\\|PC | 67.53 |\n| `x\\|y` | -0.5 |\n| n/a |  |\n") !=
        std::string::npos);
  CHECK(md.find("![Figure 5: heads \\[0, 1\\]](figures/h.png)\n\nFigure 5: heads [0, 1] ([SVG](figures/h.svg))\n\n") !=
        std::string::npos);
  CHECK(md.find("![vector only](figures/only.svg)\n\nvector only\n\n") != std::string::npos);
  CHECK(md.find("| The paper's claim | Paper | darkbert | Verdict | Why |\n"
                "| --- | ---: | --- | --- | --- |\n"
                "| The last layers change most. | 11-12 | 5-6 | **partly** | Only on MRPC. |\n"
                "| Claim two. |  | none | **not testable here** | No data. |\n") != std::string::npos);
  CHECK(md.find("- [`head_classes.csv`](head_classes.csv): one row per head\n") != std::string::npos);
  CHECK(md.find("### Sub\n\ndeeper\n") != std::string::npos);
  CHECK(md.find("[summary.json](summary.json)") != std::string::npos);
}

TEST_CASE("summary.json lists every claim in document order, sub-sections included; numbers_from quotes another report") {
  study::Report r("T");
  auto& s = r.section("§3.3 Change");
  s.claim({.claim = "First.", .paper = "p", .darkbert = "d", .verdict = study::Verdict::partly, .reason = "r"});
  s.section("Deeper").claim({.claim = "Second.", .paper = "", .darkbert = "none", .verdict = study::Verdict::reproduced, .reason = "r"});
  const auto claims = r.summary()["claims"];
  REQUIRE(claims.size() == 2);
  CHECK(claims[0] == nlohmann::json{{"section", "§3.3 Change"}, {"claim", "First."}, {"paper", "p"}, {"darkbert", "d"},
                                    {"verdict", "partly"}});
  CHECK(claims[1]["section"] == "Deeper");
  CHECK(claims[1]["verdict"] == "reproduced");
  CHECK(study::Report("empty").summary()["claims"] == nlohmann::json::array());

  // Another study's numbers, quoted whole under one key: its numbers then count as this report's.
  r.number("table1.MRPC.mean", 65.2, 1);
  r.numbers_from("gpt2", {{"table1", {{"MRPC", {{"mean", 68.0}}}}}});
  CHECK(r.numbers()["gpt2"]["table1"]["MRPC"]["mean"].get<double>() == 68.0);
  CHECK(message_of([&] { r.numbers_from("gpt2", nlohmann::json::object()); }) ==
        "report: number 'gpt2' cannot be registered: it already holds keys below it");
  CHECK(message_of([&] { r.numbers_from("bert", 3); }) == "report: the numbers quoted under 'bert' are not an object");
}

TEST_CASE("elements are checked when added") {
  study::Report r("T");
  auto& s = r.section("S");
  CHECK(message_of([&] { s.figure({.png = "/tmp/x.png"}); }) ==
        "report section 'S': figure '': '/tmp/x.png' must be relative to the output folder");
  CHECK(message_of([&] { s.figure({.png = "../x.png"}); }) ==
        "report section 'S': figure '': '../x.png' has an empty, '.' or '..' segment");
  CHECK(message_of([&] { s.figure({.png = "figures/x.svg"}); }) ==
        "report section 'S': figure '': 'figures/x.svg' does not end in .png");
  CHECK(message_of([&] { s.figure({.png = "my figure.png"}); }) ==
        "report section 'S': figure '': 'my figure.png' must be made of letters, digits and ._+-/ (relative to the output folder)");
  CHECK(message_of([&] { s.figure({.caption = "c"}); }) == "report section 'S': figure 'c' has neither a PNG nor an SVG");
  CHECK(message_of([&] { s.table({.header = {"a", "b"}, .rows = {{"1"}}, .caption = "t"}); }) ==
        "report section 'S': table 't' row 0 has 1 cells, its header 2");
  CHECK(message_of([&] { s.paragraph("bad \xFF byte"); }).rfind("report section 'S': paragraph: ", 0) == 0);
  CHECK(message_of([] { study::Report(" "); }) == "report: the title is empty");
}

TEST_CASE("HTML: text escaped, every figure embedded, nothing outside the page referenced") {
  CHECK(study::detail::report::base64("") == "");
  CHECK(study::detail::report::base64("f") == "Zg==");
  CHECK(study::detail::report::base64("fo") == "Zm8=");
  CHECK(study::detail::report::base64("foo") == "Zm9v");
  CHECK(study::detail::report::base64("foobar") == "Zm9vYmFy");
  CHECK(study::detail::report::base64("\xFF\xFE") == "//4=");

  const auto dir = darkbert::test::scratch_dir("study_report_html");
  write_figures(dir);
  study::Report r("A <b>&\"title\"");
  r.paragraph("x < y & \"z\" 'w' with `code <i>` and **strong &**");
  auto& s = r.section("One <two>");
  s.table({.header = {"<th>"}, .rows = {{"a&b"}}, .caption = "cap \"q\""});
  s.figure({.png = "figures/heads.png", .svg = "figures/heads.svg", .caption = "heat <map>"});
  s.figure({.png = "figures/curve.png", .svg = "figures/curve.svg", .caption = "curve"});
  s.figure({.svg = "figures/curve.svg", .caption = "vector only"});
  for (const auto v : {study::Verdict::reproduced, study::Verdict::partly, study::Verdict::not_reproduced,
                       study::Verdict::not_testable})
    s.claim({.claim = "claim", .paper = "p", .darkbert = "d", .verdict = v, .reason = "r"});
  s.file("cosine.csv", "values");
  r.section("Second");
  const std::string html = r.html(dir);

  CHECK(html.find("<title>A &lt;b&gt;&amp;&quot;title&quot;</title>") != std::string::npos);
  CHECK(html.find("<p>x &lt; y &amp; &quot;z&quot; &#39;w&#39; with <code>code &lt;i&gt;</code> and "
                  "<strong>strong &amp;</strong></p>") != std::string::npos);
  CHECK(html.find("<h2>One &lt;two&gt;</h2>") != std::string::npos);
  CHECK(html.find("<p class=\"caption\">cap &quot;q&quot;</p>") != std::string::npos);
  CHECK(html.find("<th>&lt;th&gt;</th>") != std::string::npos);
  CHECK(html.find("<td>a&amp;b</td>") != std::string::npos);
  CHECK(html.find("alt=\"heat &lt;map&gt;\"") != std::string::npos);
  CHECK(html.find("<span class=\"verdict reproduced\">reproduced</span>") != std::string::npos);
  CHECK(html.find("<span class=\"verdict partly\">partly</span>") != std::string::npos);
  CHECK(html.find("<span class=\"verdict not-reproduced\">not reproduced</span>") != std::string::npos);
  CHECK(html.find("<span class=\"verdict not-testable\">not testable here</span>") != std::string::npos);
  CHECK(html.find("<li><code>cosine.csv</code>: values</li>") != std::string::npos);
  CHECK(html.find("<a href=\"#report-1\">One &lt;two&gt;</a>") != std::string::npos);  // contents

  // Every figure's bytes, as written by the viz headers, are in the page as data URIs.
  for (const char* png : {"figures/heads.png", "figures/curve.png"})
    CHECK_MESSAGE(html.find("<img src=\"data:image/png;base64," + study::detail::report::base64(read_bytes(dir / png)) + "\"") !=
                      std::string::npos, png);
  for (const char* svg : {"figures/heads.svg", "figures/curve.svg"})
    CHECK_MESSAGE(html.find("href=\"data:image/svg+xml;base64," + study::detail::report::base64(read_bytes(dir / svg)) + "\"") !=
                      std::string::npos, svg);
  CHECK(html.find("<img src=\"data:image/svg+xml;base64,") != std::string::npos);  // the SVG-only figure is shown

  // Self-contained: no web address, no file of the folder in any attribute, no stylesheet or script file.
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("href=\"http") == std::string::npos);
  CHECK(html.find("=\"figures/") == std::string::npos);
  CHECK(html.find("=\"cosine.csv") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(study::detail::report::html_external_references(html).empty());
  CHECK(study::detail::report::html_external_references("<img src=\"figures/a.png\"><a href=\"https://x\">") ==
        std::vector<std::string>{"src=\"figures/a.png\"", "href=\"https://x\""});

  // The SVG gives the display width: cairo writes its size in points, shown at 4/3 pixels per point.
  pugi::xml_document svg;
  REQUIRE(svg.load_file((dir / "figures/heads.svg").c_str()));
  const double points = svg.document_element().attribute("width").as_double();
  CHECK(html.find("width=\"" + std::to_string(static_cast<long>(points * 4 / 3 + 0.5)) + "\"") != std::string::npos);

  // A figure that is not in the folder is named.
  study::Report missing("T");
  missing.section("S").figure({.png = "figures/gone.png", .caption = "gone"});
  CHECK(message_of([&] { (void)missing.html(dir); }) == (dir / "figures/gone.png").string() + ": figure 'gone' does not exist");
  CHECK(message_of([&] { missing.write(dir / "out"); }) == (dir / "out/figures/gone.png").string() + ": figure 'gone' does not exist");
  CHECK(!fs::exists(dir / "out/report.md"));  // nothing written
}

TEST_CASE("stated_numbers: what counts as a number the report states") {
  const std::string md =
      "# Report 2019\n"                                                                      // 1: a year
      "\n"                                                                                   // 2
      "## 3.4 Attention to linguistic features\n"                                            // 3: section number
      "\n"                                                                                   // 4
      "1. First item with 67.53 and -0.5 and 12.3% of 1,234,567 tokens.\n"                   // 5
      "Table 1 and Figures 8 and 9, §3.1–3.6, Section 4.2: GPT-2, L3H5, 99th, 3x3, v1.2.3, 2e-5, bert-base-uncased.\n"
      "Layers 3-4 changed; \xE2\x88\x92" "2.25 is negative; `--seeds 3` is code; [link 5](figures/fig5.png) &#39;\n"
      "```text\n"                                                                            // 8
      "42\n"                                                                                 // 9
      "```\n"                                                                                // 10
      "In 2019 we saw 2,019 and (n = 3); 1.5.\n";                                            // 11
  std::vector<std::string> texts, values;
  std::vector<std::size_t> lines;
  std::vector<int> decimals;
  for (const auto& s : study::stated_numbers(md)) {
    texts.push_back(s.text);
    values.push_back(s.value);
    lines.push_back(s.line);
    decimals.push_back(s.decimals);
  }
  CHECK(texts == std::vector<std::string>{"67.53", "-0.5", "12.3%", "1,234,567", "3", "4", "\xE2\x88\x92" "2.25", "5",
                                          "2,019", "3", "1.5"});
  CHECK(values == std::vector<std::string>{"67.53", "-0.5", "12.3", "1234567", "3", "4", "-2.25", "5", "2019", "3", "1.5"});
  CHECK(lines == std::vector<std::size_t>{5, 5, 5, 5, 7, 7, 7, 7, 11, 11, 11});
  CHECK(decimals == std::vector<int>{2, 1, 1, 0, 0, 0, 2, 0, 0, 0, 1});
  CHECK(study::stated_numbers("x 12.5% y").at(0).percent);
}

TEST_CASE("check_report passes a good report folder") {
  const auto dir = darkbert::test::scratch_dir("study_report_good");
  write_good_report(dir);
  const auto problems = study::check_report(dir);
  CHECK_MESSAGE(problems.empty(), messages_of(problems));
  // The report states its numbers (a percentage, a negative, a NaN, grouped counts) and they were checked.
  const std::string md = read_bytes(dir / "report.md");
  for (const char* stated : {"43.8%", "0.812", "-1.23", "67.53", "85.10 \xC2\xB1 1.05", "n/a", "0.871", "12,345,678", "4.5"})
    CHECK_MESSAGE(md.find(stated) != std::string::npos, stated);
  CHECK(study::stated_numbers(md).size() >= 15);
  const auto summary = nlohmann::json::parse(read_bytes(dir / "summary.json"));
  CHECK(summary["numbers"]["fig5"]["MRPC"]["mean_cosine"].get<double>() == 0.81234567);
  CHECK(summary["meta"]["model"]["hidden"] == 128);
  CHECK(summary["files"] == nlohmann::json({"figures/heads.png", "figures/heads.svg", "figures/curve.png",
                                            "figures/curve.svg", "cosine.csv", "cosine.npy"}));
}

TEST_CASE("check_report names each planted defect") {
  const auto good = darkbert::test::scratch_dir("study_report_planted_good");
  write_good_report(good);
  REQUIRE(study::check_report(good).empty());
  // A fresh copy of the good folder with one defect planted, checked.
  auto planted = [&](const std::string& name, auto&& plant) {
    const auto dir = darkbert::test::scratch_dir("study_report_planted_" + name);
    fs::copy(good, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    plant(dir);
    return study::check_report(dir);
  };
  using D = study::ReportDefect;

  SUBCASE("a figure is missing") {
    const auto p = planted("missing_figure", [](const fs::path& d) { fs::remove(d / "figures/heads.png"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::missing_file, D::missing_file});
    CHECK(p[0].file == "report.md");
    CHECK(p[0].line > 0);
    CHECK(p[0].message.find("links to 'figures/heads.png', which is not in the folder") != std::string::npos);
    CHECK(p[1].message == "summary.json: lists 'figures/heads.png', which is not in the folder");
  }
  SUBCASE("report.html is missing") {
    const auto p = planted("missing_html", [](const fs::path& d) { fs::remove(d / "report.html"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::missing_file, D::missing_file});  // and report.md links to it
    CHECK(p[0].message == "report.html: missing");
    CHECK(p[1].message.find("links to 'report.html', which is not in the folder") != std::string::npos);
  }
  SUBCASE("a JSON file does not parse") {
    const auto p = planted("bad_json", [](const fs::path& d) { std::ofstream(d / "cosine.json") << "{\"values\": [1, "; });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_json});
    CHECK(p[0].file == "cosine.json");
    CHECK(p[0].message.rfind("cosine.json: does not parse: ", 0) == 0);
  }
  SUBCASE("summary.json has no numbers") {
    const auto p = planted("no_numbers", [](const fs::path& d) { std::ofstream(d / "summary.json") << "{\"files\": []}"; });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_json});
    CHECK(p[0].message == "summary.json: has no \"numbers\" object");
  }
  SUBCASE("a CSV row has a field too many") {
    const auto p = planted("bad_csv", [](const fs::path& d) { append(d / "cosine.csv", "2,0.1,0.2,0.3,0.4\n"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_csv});
    CHECK(p[0].message == "cosine.csv:4: 5 fields, the first row has 4");
  }
  SUBCASE("a CSV quote is never closed") {
    const auto p = planted("open_quote", [](const fs::path& d) { append(d / "cosine.csv", "\"2,0.1\n"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_csv});
    CHECK(p[0].message == "cosine.csv:4: a quoted field is not closed");
  }
  SUBCASE("a .npy file is truncated") {
    const auto p = planted("bad_npy", [](const fs::path& d) { fs::resize_file(d / "cosine.npy", 100); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_npy});
    CHECK(p[0].message.find("cosine.npy: does not read: ") == 0);
  }
  SUBCASE("a PNG does not decode") {
    const auto p = planted("bad_png", [](const fs::path& d) { fs::resize_file(d / "figures/curve.png", 200); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_png});
    CHECK(p[0].message.rfind("figures/curve.png: does not decode: ", 0) == 0);
  }
  SUBCASE("an SVG is not well-formed") {
    const auto p = planted("bad_svg", [](const fs::path& d) { fs::resize_file(d / "figures/heads.svg", 300); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::bad_svg});
    CHECK(p[0].message.rfind("figures/heads.svg: is not well-formed XML: ", 0) == 0);
  }
  SUBCASE("the report states a number it did not register") {
    const auto p = planted("typed_number", [](const fs::path& d) { append(d / "report.md", "\nThe gain was 4.56 points.\n"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::unregistered_number});
    CHECK(p[0].message.find(":" + std::to_string(p[0].line) + ": 4.56 is not among summary.json's numbers (2 decimals)") !=
          std::string::npos);
  }
  SUBCASE("the report states a registered number at a precision that does not round to it") {
    const auto p = planted("wrong_precision", [](const fs::path& d) { replace_in(d / "report.md", "67.53", "67.54"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::unregistered_number});
    CHECK(p[0].message.find("67.54 is not among") != std::string::npos);
  }
  SUBCASE("a percentage that is not 100 times a registered fraction") {
    const auto p = planted("wrong_percent", [](const fs::path& d) { replace_in(d / "report.md", "43.8%", "43.9%"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::unregistered_number});
    CHECK(p[0].message.find("43.9% is not among summary.json's numbers (1 decimal, as a percentage)") != std::string::npos);
  }
  SUBCASE("the page loads a file from the folder") {
    const auto p = planted("external", [](const fs::path& d) {
      replace_in(d / "report.html", "<footer>", "<img src=\"figures/heads.png\"><footer>");
    });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::external_reference});
    CHECK(p[0].message == "report.html: src=\"figures/heads.png\" refers to something outside the page");
  }
  SUBCASE("the page links a web address and imports a stylesheet") {
    const auto p = planted("web", [](const fs::path& d) {
      replace_in(d / "report.html", "<footer>", "<a href=\"https://example.org/\">x</a><footer>");
      replace_in(d / "report.html", "<style>", "<style>@import 'x.css';");
    });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::external_reference, D::external_reference});
  }
  SUBCASE("the Markdown links outside the folder") {
    const auto p = planted("outside", [](const fs::path& d) { append(d / "report.md", "\n[secret](../secret.txt)\n"); });
    INFO(messages_of(p));
    REQUIRE(kinds_of(p) == std::vector<D>{D::external_reference});
    CHECK(p[0].message.find("links to '../secret.txt', outside the report folder") != std::string::npos);
  }
  SUBCASE("temporary files of an interrupted write are skipped") {
    const auto p = planted("temporary", [](const fs::path& d) { std::ofstream(d / ".cosine.csv.tmp-1-0") << "\"torn"; });
    INFO(messages_of(p));
    CHECK(p.empty());
  }
  CHECK(study::defect_name(D::unregistered_number) == "unregistered number");
  CHECK(study::check_report(good / "nowhere").at(0).message == (good / "nowhere").string() + ": the report folder does not exist");
}
