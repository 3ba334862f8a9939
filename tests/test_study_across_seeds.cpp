// Tests for study/across_seeds.hpp: mean and sample sd over seeds (by hand), cell by cell over tables, the
// seed-folder layout that lets results computed on different machines be merged, and the seed a fine-tuned
// folder names.
#include <doctest/doctest.h>

#include <cmath>   // std::isnan
#include <string>  // std::string
#include <vector>  // std::vector

#include "darkbert/study/across_seeds.hpp"
#include "test_support.hpp"

namespace study = darkbert::study;

TEST_CASE("mean_sd: the sample standard deviation (n - 1), NaN where it is undefined") {
  const auto s = study::mean_sd({1.0, 2.0, 4.0});
  CHECK(s.mean == doctest::Approx(7.0 / 3));
  CHECK(s.sd == doctest::Approx(1.5275252));
  CHECK(s.n == 3);
  const auto one = study::mean_sd({0.5});
  CHECK(one.mean == 0.5);
  CHECK(std::isnan(one.sd));
  CHECK(std::isnan(study::mean_sd({}).mean));
  CHECK(one.to_json() == nlohmann::json{{"mean", 0.5}, {"sd", "nan"}, {"n", 1}});
}

TEST_CASE("table_mean_sd: cell by cell, named, shapes checked") {
  auto a = darkbert::make_head_matrix<double>("x", 1, 2), b = a, c = a;
  a(0, 0) = 1, b(0, 0) = 2, c(0, 0) = 4;
  a(0, 1) = b(0, 1) = c(0, 1) = 0.25;
  const auto s = study::table_mean_sd({a, b, c}, "cosine");
  CHECK(s.mean.name == "cosine_mean");
  CHECK(s.sd.name == "cosine_sd");
  CHECK(s.mean(0, 0) == doctest::Approx(7.0 / 3));
  CHECK(s.sd(0, 0) == doctest::Approx(1.5275252));
  CHECK(s.sd(0, 1) == 0.0);
  CHECK(s.mean.examples == 3);
  const auto wide = darkbert::make_head_matrix<double>("x", 1, 3);
  CHECK(darkbert::test::message_of([&] { study::table_mean_sd({a, wide}, "cosine"); }) ==
        "cosine: result 1 is 1 x 3 but result 0 is 1 x 2");
  CHECK(darkbert::test::message_of([] { study::table_mean_sd({}, "cosine"); }) == "cosine: no per-seed results to aggregate");
}

TEST_CASE("seed_dirs: the seed-<k> folders of a task, by seed number, nothing else") {
  const auto dir = darkbert::test::scratch_dir("study_across_seeds");
  const auto task = study::task_dir(dir, darkbert::GlueTask::stsb);
  CHECK(task == dir / "STS-B");
  CHECK(study::seed_dirs(task).empty());
  for (std::uint64_t s : {10, 2, 1}) std::filesystem::create_directories(study::seed_dir(task, s));
  for (const char* other : {"seed-", "seed-x", "seeds-3", "figures"}) std::filesystem::create_directories(task / other);
  darkbert::test::write_file(task / "seed-7", "a file, not a folder");
  const auto found = study::seed_dirs(task);
  REQUIRE(found.size() == 3);
  CHECK(found[0].filename() == "seed-1");
  CHECK(found[1].filename() == "seed-2");
  CHECK(found[2].filename() == "seed-10");
}

TEST_CASE("fine_tuning_seed: metrics.json's seed, the fallback without one, a named error for a bad one") {
  const auto dir = darkbert::test::scratch_dir("study_across_seeds_fine_tuning_seed");
  CHECK(study::fine_tuning_seed(dir, 4) == 4);
  darkbert::test::write_file(dir / "metrics.json", R"({"task": "MRPC", "seed": 3})");
  CHECK(study::fine_tuning_seed(dir, 4) == 3);
  const auto path = (dir / "metrics.json").string();
  for (const char* bad : {R"({"task": "MRPC"})", R"({"seed": "3"})", R"({"seed": -1})", R"({"seed": 2.5})", "[3]"}) {
    CAPTURE(bad);
    darkbert::test::write_file(dir / "metrics.json", bad);
    CHECK_THROWS_WITH_AS(study::fine_tuning_seed(dir, 4), doctest::Contains(path.c_str()), darkbert::error);
  }
  darkbert::test::write_file(dir / "metrics.json", "{\"seed\": ");
  CHECK_THROWS_WITH_AS(study::fine_tuning_seed(dir, 4), doctest::Contains(path.c_str()), darkbert::error);
}
