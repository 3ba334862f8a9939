// TSV reader: QUOTE_NONE and CSV quoting, BOM, CRLF, and errors naming file and line.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem::path
#include <string>      // std::string

#include "darkbert/data/tsv.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;

namespace {

fs::path write_tsv(const std::string& name, const std::string& content) {
  static const auto dir = darkbert::test::scratch_dir("data_tsv");
  return darkbert::test::write_file(dir / name, content);
}

}  // namespace

TEST_CASE("QUOTE_NONE keeps quotes as text; header and rows; line numbers") {
  const auto p = write_tsv("plain.tsv", "a\tb\n1\the said \"hi\n\"2\tx\n");
  const auto t = darkbert::read_tsv(p);
  REQUIRE(t.header == std::vector<std::string>{"a", "b"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].fields[1] == "he said \"hi");
  CHECK(t.rows[0].line == 2);
  CHECK(t.rows[1].fields[0] == "\"2");
  CHECK(t.rows[1].line == 3);
  CHECK(t.column("b") == 1);
}

TEST_CASE("BOM before the header is dropped; CRLF line ends; last line without newline") {
  const auto p = write_tsv("bom.tsv", "\xEF\xBB\xBFQuality\tx\r\n1\ty\r\n0\tz");
  const auto t = darkbert::read_tsv(p);
  CHECK(t.header[0] == "Quality");
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].fields[1] == "y");
  CHECK(t.rows[1].fields[1] == "z");
}

TEST_CASE("CSV quoting: quoted fields with doubled quotes, tabs and newlines inside") {
  const auto p = write_tsv("csv.tsv", "s1\ts2\tlabel\n\"He said \"\"no\"\".\"\tplain \"x\"\t0\n\"multi\nline\"\t\"a\tb\"\t1\nz\ty\t0\n");
  darkbert::TsvOptions o;
  o.quoting = darkbert::Quoting::csv;
  const auto t = darkbert::read_tsv(p, o);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].fields[0] == "He said \"no\".");
  CHECK(t.rows[0].fields[1] == "plain \"x\"");  // a quote inside an unquoted field is literal
  CHECK(t.rows[1].fields[0] == "multi\nline");
  CHECK(t.rows[1].fields[1] == "a\tb");
  CHECK(t.rows[1].line == 3);
  CHECK(t.rows[2].line == 5);
}

TEST_CASE("max_rows stops early") {
  const auto p = write_tsv("many.tsv", "a\n1\n2\n3\n");
  darkbert::TsvOptions o;
  o.max_rows = 2;
  CHECK(darkbert::read_tsv(p, o).rows.size() == 2);
}

TEST_CASE("broken TSV files: errors name the file, the line and the problem") {
  const auto ragged = write_tsv("ragged.tsv", "a\tb\tc\n1\t2\t3\n1\t2\n");
  auto msg = message_of([&] { darkbert::read_tsv(ragged); });
  CHECK(msg.find("ragged.tsv:3:") != std::string::npos);
  CHECK(msg.find("expected 3 tab-separated fields") != std::string::npos);
  CHECK(msg.find("got 2") != std::string::npos);

  const auto extra = write_tsv("extra.tsv", "a\tb\n1\t2\t3\n");
  msg = message_of([&] { darkbert::read_tsv(extra); });
  CHECK(msg.find("extra.tsv:2:") != std::string::npos);

  darkbert::TsvOptions csv;
  csv.quoting = darkbert::Quoting::csv;
  const auto unclosed = write_tsv("unclosed.tsv", "a\tb\n1\t2\n\"never closed\t3\n4\t5\n");
  msg = message_of([&] { darkbert::read_tsv(unclosed, csv); });
  CHECK(msg.find("unclosed.tsv:3:") != std::string::npos);
  CHECK(msg.find("never closed") != std::string::npos);

  const auto junk = write_tsv("junk.tsv", "a\tb\n\"x\"y\t2\n");
  msg = message_of([&] { darkbert::read_tsv(junk, csv); });
  CHECK(msg.find("junk.tsv:2:") != std::string::npos);
  CHECK(msg.find("after a closing quote") != std::string::npos);

  const auto blank = write_tsv("blank.tsv", "a\tb\n1\t2\n\n3\t4\n");
  msg = message_of([&] { darkbert::read_tsv(blank); });
  CHECK(msg.find("blank.tsv:3: empty line") != std::string::npos);

  const auto empty = write_tsv("empty.tsv", "");
  msg = message_of([&] { darkbert::read_tsv(empty); });
  CHECK(msg.find("empty.tsv: empty file") != std::string::npos);

  msg = message_of([&] { darkbert::read_tsv(write_tsv("nocol.tsv", "a\tb\n")).column("c"); });
  CHECK(msg.find("nocol.tsv:1: no column 'c'") != std::string::npos);
  CHECK(msg.find("'a', 'b'") != std::string::npos);

  msg = message_of([&] { darkbert::read_tsv("/nonexistent/x.tsv"); });
  CHECK(msg.find("/nonexistent/x.tsv: cannot open") != std::string::npos);
}
