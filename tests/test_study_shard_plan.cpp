// Tests for study/shard_plan.hpp: K/N and Slurm parsing, the longest-processing-time split over dependency
// groups (deterministic, groups never split, list order kept inside a shard), and the study's own groups.
#include <doctest/doctest.h>

#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <optional>    // std::optional
#include <string>      // std::string
#include <vector>      // std::vector

#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/study_plan.hpp"
#include "study_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::study::WorkUnit;
using darkbert::test::message_of;

namespace {

WorkUnit unit(const std::string& id, double cost, const std::string& group = "") {
  return {.id = id, .cost = cost, .run = [](const fs::path&) {}, .group = group};
}

darkbert::EnvironmentLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace

TEST_CASE("parse_shard_spec: K/N counted from 1; anything else is refused quoting the text") {
  const auto s = darkbert::study::parse_shard_spec("2/3");
  CHECK(s.index == 2);
  CHECK(s.count == 3);
  CHECK(darkbert::study::parse_shard_spec("1/1").count == 1);
  for (const std::string bad : {"0/3", "4/3", "3", "a/b", "", "1/0", "-1/2", "1/2/3"})
    CHECK(message_of([&] { darkbert::study::parse_shard_spec(bad); }).find("--shard '" + bad + "': expected K/N") == 0);
}

TEST_CASE("shard_from_slurm: K from the array task id, its minimum and step; N from the task count") {
  auto s = darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_MIN", "4"},
                                                     {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  CHECK(s.index == 2);
  CHECK(s.count == 3);
  s = darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                                                {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  CHECK(s.index == 1);
  CHECK(s.count == 4);
  s = darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                                                {"SLURM_ARRAY_TASK_STEP", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  CHECK(s.index == 3);
  CHECK(s.count == 3);
  CHECK(message_of([] { darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_MIN", "1"}})); }) ==
        "--shard auto: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT not set; --shard auto is for Slurm job arrays "
        "(sbatch --array=1-N), elsewhere give --shard K/N");
  CHECK(message_of([] {
          darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_MIN", "1"},
                                                    {"SLURM_ARRAY_TASK_COUNT", "3"}}));
        }).find("SLURM_ARRAY_TASK_ID=9 does not fit") != std::string::npos);
  CHECK(message_of([] {
          darkbert::study::shard_from_slurm(env_of({{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_MIN", "1"},
                                                    {"SLURM_ARRAY_TASK_COUNT", "3"}}));
        }) == "--shard auto: SLURM_ARRAY_TASK_ID='x1' is not a whole number");
}

TEST_CASE("plan_shards: largest group first onto the least loaded shard; groups stay whole, list order kept") {
  // Groups: g (a 5 + b 3 = 8), c 7, d 4, e 2. LPT on 2 shards: g -> 1 (8), c -> 2 (7), d -> 2 (11), e -> 1 (10).
  const std::vector<WorkUnit> units = {unit("a", 5, "g"), unit("c", 7), unit("d", 4), unit("b", 3, "g"), unit("e", 2)};
  const auto p = darkbert::study::plan_shards(units, 2);
  CHECK(p.shard_of == std::vector<int>{1, 2, 2, 1, 1});
  CHECK(p.load == std::vector<double>{10, 11});
  CHECK(p.total == 21);
  CHECK(p.makespan == 11);
  CHECK(p.critical_path == 8);
  CHECK(p.groups == 4);
  CHECK(p.units_of(1) == std::vector<std::size_t>{0, 3, 4});
  CHECK(p.balance() == doctest::Approx(10.5 / 11));
  // One shard: everything, the time of one rank.
  const auto one = darkbert::study::plan_shards(units, 1);
  CHECK(one.units_of(1).size() == units.size());
  CHECK(one.makespan == 21);
  // More shards than groups: the costliest group bounds the time; the extra shards are empty.
  const auto many = darkbert::study::plan_shards(units, 6);
  CHECK(many.makespan == 8);
  CHECK(many.units_of(5).empty());
  CHECK(many.units_of(6).empty());
  // Equal costs: the earlier group, onto the lower shard.
  const auto ties = darkbert::study::plan_shards({unit("x", 1), unit("y", 1), unit("z", 1)}, 2);
  CHECK(ties.shard_of == std::vector<int>{1, 2, 1});
  CHECK(message_of([&] { darkbert::study::plan_shards(units, 0); }) == "shards: need at least one, got 0");
}

TEST_CASE("the study's shards: every unit reading a fine-tuned checkpoint runs with the unit that writes it") {
  const auto out = darkbert::test::scratch_root() / "study_shard_plan" / "plan-only";
  fs::remove_all(out);
  const auto root = darkbert::test::shared_root();
  const auto plan = darkbert::study::plan_study(
      root, {.out = out, .model = darkbert::test::golden_dir() / "models/bert_model_real_vocab",
             .tasks = {darkbert::GlueTask::mrpc, darkbert::GlueTask::rte}, .seeds = 3, .quick = true,
             .show_progress = false, .plan_only = true});
  CHECK_FALSE(fs::exists(out));  // --plan writes nothing
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < plan.units.size(); ++i) index[plan.units[i].id] = i;
  REQUIRE(index.size() == plan.units.size());
  for (int n = 1; n <= 7; ++n) {
    const auto shards = darkbert::study::plan_shards(plan.units, n);
    const auto again = darkbert::study::plan_shards(plan.units, n);
    CHECK(shards.shard_of == again.shard_of);
    for (const std::string task : {"MRPC", "RTE"})
      for (int seed = 1; seed <= 3; ++seed) {
        const std::string s = "seed-" + std::to_string(seed);
        const int writer = shards.shard_of[index.at("table1/" + task + "/pretrained/" + s)];
        std::vector<std::string> readers = {"change/" + task + "/" + s, "disable/" + task + "/" + s};
        if (seed == 1) readers.insert(readers.end(), {"patterns/" + task, "features/" + task, "relations/" + task});
        for (const auto& r : readers) {
          CAPTURE(r);
          CHECK(shards.shard_of[index.at(r)] == writer);
          CHECK(index.at(r) > index.at("table1/" + task + "/pretrained/" + s));  // and after it in the list
        }
      }
    double sum = 0;
    for (double l : shards.load) sum += l;
    CHECK(sum == doctest::Approx(shards.total));
  }
}
