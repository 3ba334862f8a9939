// Tests for study/unit_costs.hpp: the loading cost per example (a tiny run is not priced as a full one),
// the one-core slowdown by width (the three measured points, interpolation and clamping), Amdahl's law
// to C cores, the workers that finish soonest, and shard_plan.hpp's predicted_seconds built on them.
#include <doctest/doctest.h>

#include <vector>  // std::vector

#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/unit_costs.hpp"

using darkbert::study::UnitCosts;

TEST_CASE("unit costs: loading grows with the examples, so tiny runs cost little and full ones as measured") {
  const UnitCosts study{};
  // At the default sizes the loading costs are the measured start-ups: 1 s for 2,000 training examples,
  // 0.3 s for 500 scored ones.
  CHECK(study.fine_tune(2000, 0, 100) == doctest::Approx(1.0).epsilon(0.01));
  CHECK(study.evaluate(500, 100) - 500 * study.sorted_eval_example(100) == doctest::Approx(0.3).epsilon(0.01));
  CHECK(study.sorted_eval_example(100) < study.eval_example(100));  // scoring sorts by length: less padding
  CHECK(study.fine_tune(32, 1, 100) < 0.2);  // a --quick run: not the 1 s start-up of a full one
  CHECK(study.section(16, 100, 2) < study.section(16, 100, 2, 0.3));
  // Bigger models cost more per example, in proportion to layers x hidden^2.
  const UnitCosts base{.layers = 12, .hidden = 768, .heads = 12};
  CHECK(base.train_example(100) / study.train_example(100) == doctest::Approx(72.0));
}

TEST_CASE("one-core slowdown: the measured points, linear in log2(width) between, the nearest outside") {
  CHECK(UnitCosts{.hidden = 64}.one_core_slowdown() == doctest::Approx(1.31));
  CHECK(UnitCosts{.hidden = 128}.one_core_slowdown() == doctest::Approx(1.54));
  CHECK(UnitCosts{.hidden = 768}.one_core_slowdown() == doctest::Approx(1.90));
  CHECK(UnitCosts{.hidden = 32}.one_core_slowdown() == doctest::Approx(1.31));
  CHECK(UnitCosts{.hidden = 4096}.one_core_slowdown() == doctest::Approx(1.90));
  const double mid = UnitCosts{.hidden = 256}.one_core_slowdown();
  CHECK(mid > 1.54);
  CHECK(mid < 1.90);
}

TEST_CASE("on_cores: two cores as measured, one core the slowdown, more cores less time but never below the serial share") {
  const UnitCosts c{.hidden = 128};
  CHECK(c.on_cores(10.0, 2) == doctest::Approx(10.0));
  CHECK(c.on_cores(10.0, 1) == doctest::Approx(15.4));
  CHECK(c.on_cores(10.0, 4) < 10.0);
  CHECK(c.on_cores(10.0, 8) < c.on_cores(10.0, 4));
  const double serial = 2.0 / 1.54 - 1.0;  // the share no core count removes
  CHECK(c.on_cores(10.0, 1e9) == doctest::Approx(10.0 * serial / (serial + (1 - serial) / 2)));
}

TEST_CASE("predicted_seconds: a process's overhead plus the most loaded shard at that many cores") {
  const auto noop = [](const std::filesystem::path&) {};
  const std::vector<darkbert::study::WorkUnit> units = {
      {.id = "a", .cost = 6, .run = noop}, {.id = "b", .cost = 3, .run = noop}, {.id = "c", .cost = 2, .run = noop}};
  const auto plan = darkbert::study::plan_shards(units, 2);
  REQUIRE(plan.makespan == doctest::Approx(6));
  const UnitCosts c{.hidden = 64};
  CHECK(darkbert::study::predicted_seconds(plan, c, 2) == doctest::Approx(UnitCosts::process_overhead + 6));
  CHECK(darkbert::study::predicted_seconds(plan, c, 1) == doctest::Approx(UnitCosts::process_overhead + 6 * 1.31));
}

TEST_CASE("fastest_workers: one thread each where a unit leaves the second core idle, one worker where it does not") {
  const double k = UnitCosts::worker_contention;
  CHECK(UnitCosts{.hidden = 128}.on_workers(10.0, 2, 2) == doctest::Approx(10.0 * 1.54 * k / 2));
  CHECK(UnitCosts{.hidden = 128}.on_workers(10.0, 2, 1) == doctest::Approx(10.0));
  CHECK(UnitCosts{.hidden = 128}.fastest_workers(2) == 2);   // 1.54 x 1.2 / 2 = 0.92 of one worker's time
  CHECK(UnitCosts{.hidden = 64}.fastest_workers(2) == 2);
  CHECK(UnitCosts{.hidden = 768}.fastest_workers(2) == 1);   // 1.90 x 1.2 / 2 = 1.14: slower
  CHECK(UnitCosts{.hidden = 128}.fastest_workers(1) == 1);
  CHECK(UnitCosts{.hidden = 128}.fastest_workers(0) == 1);
  const int w = UnitCosts{.hidden = 128}.fastest_workers(8);
  CHECK(8 % w == 0);
  CHECK(w > 1);
}

TEST_CASE("predicted_seconds with workers: the shard's load shared by the workers, never below its costliest chain") {
  const auto noop = [](const std::filesystem::path&) {};
  const std::vector<darkbert::study::WorkUnit> units = {
      {.id = "a", .cost = 6, .run = noop}, {.id = "b", .cost = 3, .run = noop}, {.id = "c", .cost = 3, .run = noop}};
  const auto one_rank = darkbert::study::plan_shards(units, 1);
  const UnitCosts c{.hidden = 64};
  const double k = UnitCosts::worker_contention;
  // Two workers of one core: 12 s of two-core work, halved, each unit 1.31 times slower on one core and
  // slower again beside the other worker.
  CHECK(darkbert::study::predicted_seconds(one_rank, c, 2, 2) == doctest::Approx(UnitCosts::process_overhead + 6 * 1.31 * k));
  // Four workers would leave the costliest unit (6) as the bound.
  CHECK(darkbert::study::predicted_seconds(one_rank, c, 4, 4) == doctest::Approx(UnitCosts::process_overhead + 6 * 1.31 * k));
  CHECK(darkbert::study::predicted_seconds(one_rank, c, 2, 1) == doctest::Approx(UnitCosts::process_overhead + 12));
}
