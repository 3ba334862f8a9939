// Result tables: exact CSV / JSON text, .npy readable by xtensor (and so numpy), JSON round trip including NaN
// and infinities, and every writer / reader error names the file and the problem.

#include <doctest/doctest.h>

#include <cmath>       // std::isnan, INFINITY, NAN
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream, std::ofstream
#include <sstream>     // std::stringstream
#include <string>      // std::string

#include <xtensor/xnpy.hpp>  // xt::load_npy

#include "darkbert/analysis/results.hpp"
#include "test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

namespace {
std::string read_results_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Table<double> sample() {
  auto t = make_head_matrix<double>("entropy", 2, 3);
  t(0, 0) = 0.5;
  t(0, 1) = -1.25;
  t(0, 2) = NAN;
  t(1, 0) = INFINITY;
  t(1, 1) = -INFINITY;
  t(1, 2) = 0.1;
  t.examples = 7;
  return t;
}
}  // namespace

TEST_CASE("head matrix shape and names") {
  const auto m = make_head_matrix<float>("x", 3, 2, 1.5f);
  CHECK(m.rows() == 3);
  CHECK(m.cols() == 2);
  CHECK(m.row_axis == "layer");
  CHECK(m.col_axis == "head");
  CHECK(m.row_names == std::vector<std::string>{"0", "1", "2"});
  CHECK(m.col_names == std::vector<std::string>{"0", "1"});
  CHECK(m(2, 1) == 1.5f);
  CHECK(message_of([] { make_head_matrix<double>("bad", 0, 2); }) ==
        "head matrix 'bad': needs layers >= 1 and heads >= 1, got 0 x 2");
}

TEST_CASE("numbers are written in shortest round-trip form") {
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(0.1f) == "0.1");  // the float, not its double expansion
  CHECK(format_number(1.0 / 3.0) == "0.3333333333333333");
  CHECK(format_number(-2.5e-300) == "-2.5e-300");
  CHECK(format_number(double(NAN)) == "nan");
  CHECK(format_number(-double(INFINITY)) == "-inf");
}

TEST_CASE("CSV text") {
  CHECK(to_csv(sample()) == "layer,0,1,2\n0,0.5,-1.25,nan\n1,inf,-inf,0.1\n");
  auto t = make_table<float>("cls", "head", {"0"}, "category", {"[SEP]", "a,b", "say \"hi\""}, 0.25f);
  CHECK(to_csv(t) == "head,[SEP],\"a,b\",\"say \"\"hi\"\"\"\n0,0.25,0.25,0.25\n");
}

TEST_CASE("JSON text and round trip") {
  const auto j = to_json(sample());
  CHECK(j["format"] == "darkbert-table/1");
  CHECK(j["name"] == "entropy");
  CHECK(j["row_axis"] == "layer");
  CHECK(j["cols"] == nlohmann::json({"0", "1", "2"}));
  CHECK(j["examples"] == 7);
  CHECK(j["dtype"] == "float64");
  CHECK(j["values"].dump() == R"([[0.5,-1.25,"nan"],["inf","-inf",0.1]])");
  CHECK(to_json(make_head_matrix<float>("f", 1, 1, 0.1f))["values"].dump() == "[[0.1]]");

  const auto back = table_from_json<double>(j, "memory");
  CHECK(back.name == "entropy");
  CHECK(back.examples == 7);
  CHECK(back.row_names == sample().row_names);
  CHECK(back(0, 1) == -1.25);
  CHECK(std::isnan(back(0, 2)));
  CHECK(back(1, 0) == INFINITY);
  CHECK(back(1, 1) == -INFINITY);
  CHECK(back(1, 2) == 0.1);
}

TEST_CASE("write_table writes CSV, JSON and .npy under the table's name") {
  const auto dir = test::scratch_dir("analysis_results") / "nested";
  write_table(sample(), dir);
  CHECK(read_results_file(dir / "entropy.csv") == to_csv(sample()));
  const auto again = read_json_table<double>(dir / "entropy.json");
  CHECK(again.values.shape(0) == 2);
  CHECK(again(1, 2) == 0.1);
  const auto npy = xt::load_npy<double>((dir / "entropy.npy").string());
  REQUIRE(npy.dimension() == 2);
  CHECK(npy.shape()[0] == 2);
  CHECK(npy.shape()[1] == 3);
  CHECK(npy(0, 1) == -1.25);
  CHECK(std::isnan(npy(0, 2)));
  CHECK(npy(1, 1) == -INFINITY);

  // float tables keep their dtype in the .npy header.
  write_table(make_head_matrix<float>("single", 2, 2, 0.5f), dir);
  CHECK(read_results_file(dir / "single.npy").find("'descr': '<f4'") != std::string::npos);
  CHECK(xt::load_npy<float>((dir / "single.npy").string())(1, 1) == 0.5f);
}

TEST_CASE("writer and reader errors name the file and the problem") {
  const auto dir = test::scratch_dir("analysis_results_errors");
  const auto missing = dir / "no_such_folder" / "x.csv";
  CHECK(message_of([&] { write_csv(sample(), missing); }) ==
        missing.string() + ": cannot open for writing: No such file or directory");
  CHECK(message_of([&] { write_npy(sample(), dir / "no_such_folder" / "x.npy"); }).find(": cannot open for writing") !=
        std::string::npos);
  auto unnamed = sample();
  unnamed.name = "a/b";
  CHECK(message_of([&] { write_table(unnamed, dir); }) ==
        "write_table: table name 'a/b' cannot be used as a file name");
  auto broken = sample();
  broken.row_names.pop_back();
  CHECK(message_of([&] { to_csv(broken); }) == "table 'entropy': 1 row names for 2 rows");

  const auto bad = dir / "bad.json";
  std::ofstream(bad) << "{not json";
  CHECK(message_of([&] { read_json_table<double>(bad); }).rfind(bad.string() + ": not valid JSON: ", 0) == 0);
  CHECK(message_of([&] { read_json_table<double>(dir / "absent.json"); }) ==
        (dir / "absent.json").string() + ": cannot open for reading: No such file or directory");

  auto j = to_json(sample());
  j.erase("values");
  CHECK(message_of([&] { table_from_json<double>(j, "t.json"); }) == "t.json: key 'values' missing");
  j = to_json(sample());
  j["format"] = "other/2";
  CHECK(message_of([&] { table_from_json<double>(j, "t.json"); }) ==
        "t.json: format is \"other/2\", expected \"darkbert-table/1\"");
  j = to_json(sample());
  j["values"][1] = nlohmann::json::array({1, 2});
  CHECK(message_of([&] { table_from_json<double>(j, "t.json"); }) == "t.json: values row 1 has 2 entries, expected 3");
  j = to_json(sample());
  j["values"][0][2] = "NaN?";
  CHECK(message_of([&] { table_from_json<double>(j, "t.json"); }) ==
        "t.json: values[0][2] is \"NaN?\", expected a number or \"nan\", \"inf\", \"-inf\"");
  j = to_json(sample());
  j["name"] = 3;
  CHECK(message_of([&] { table_from_json<double>(j, "t.json"); }) == "t.json: 'name' is 3, expected a string");
}
