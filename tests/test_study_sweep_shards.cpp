// Tests for study/sweep_shards.hpp: contiguous ablation ranges balanced by blocks, and shards of a sweep
// merged into the whole result (scores exactly, NaN included, blocks counted once for the baseline);
// missing, duplicated, foreign and damaged shards named.
#include <doctest/doctest.h>

#include <algorithm>   // std::next_permutation
#include <cmath>       // std::isnan
#include <filesystem>  // std::filesystem
#include <limits>      // std::numeric_limits
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/study/sweep_shards.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using darkbert::test::message_of;
namespace study = darkbert::study;

namespace {

// A whole 3 x 4 sweep with distinct scores.
study::DisableHeadsResult whole_sweep() {
  study::DisableHeadsResult r;
  r.task = "SST-2", r.metric = "accuracy", r.policy = "uniform", r.model = "m", r.provenance = "dev", r.seed = 2;
  r.examples = 40, r.baseline = 0.625, r.seconds = 1.5, r.block_evaluations = 3 * (3 + 30);  // 3 batches
  r.head_scores = darkbert::make_head_matrix<double>("head_scores", 3, 4);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) r.head_scores(l, h) = 0.5 + 0.01 * (4 * l + h) + 1e-13;
  r.layer_scores = darkbert::make_table<double>("layer_scores", "layer", darkbert::detail::index_names(3), "metric", {"accuracy"});
  for (int l = 0; l < 3; ++l) r.layer_scores(l, 0) = 0.3 + 0.1 * l;
  r.head_scores.examples = r.layer_scores.examples = 40;
  return r;
}

// Shard k of n of whole_sweep(), as disable_heads with `.ablations = range` computes it, written to `dir`.
void write_part(const fs::path& dir, int k, int n, const nlohmann::json& fp) {
  auto part = whole_sweep();
  const auto blocks = study::sweep_ablation_blocks(3, 4);
  const auto range = study::sweep_shard_range(blocks, {k, n});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  long ran = 0;
  for (std::size_t a = 0; a < 15; ++a) {
    if (a >= range.first && a < range.second) {
      ran += blocks[a];
      continue;
    }
    if (a < 12) part.head_scores(static_cast<darkbert::Index>(a / 4), static_cast<darkbert::Index>(a % 4)) = nan;
    else part.layer_scores(static_cast<darkbert::Index>(a - 12), 0) = nan;
  }
  part.block_evaluations = 3 * (3 + ran);
  part.seconds = 0.5;
  study::write_sweep_shard(dir, part, fp, {k, n}, range, 3 * 3);
}

// Every value identical (not merely close): the merge only moves numbers.
bool same_values(const darkbert::Table<double>& a, const darkbert::Table<double>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (darkbert::Index i = 0; i < a.rows(); ++i)
    for (darkbert::Index j = 0; j < a.cols(); ++j)
      if (a(i, j) != b(i, j)) return false;
  return true;
}

const nlohmann::json sweep_fingerprint = {{"sweep", 1}, {"model", "m"}, {"max_examples", 40}};

}  // namespace

TEST_CASE("sweep_shard_range: contiguous ranges covering every ablation once, balanced by blocks") {
  const auto blocks = study::sweep_ablation_blocks(3, 4);  // heads 3,3,3,3,2,2,2,2,1,1,1,1, layers 3,2,1
  CHECK(blocks == std::vector<long>{3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 3, 2, 1});
  CHECK(study::sweep_shard_range(blocks, {1, 1}) == std::pair<std::size_t, std::size_t>{0, 15});
  CHECK(study::sweep_shard_range(blocks, {1, 3}) == std::pair<std::size_t, std::size_t>{0, 4});   // 12 blocks
  CHECK(study::sweep_shard_range(blocks, {2, 3}) == std::pair<std::size_t, std::size_t>{4, 8});   // 8
  CHECK(study::sweep_shard_range(blocks, {3, 3}) == std::pair<std::size_t, std::size_t>{8, 15});  // 10
  for (int n = 1; n <= 20; ++n) {
    std::size_t next = 0;
    for (int k = 1; k <= n; ++k) {
      const auto [b, e] = study::sweep_shard_range(blocks, {k, n});
      CHECK(b == next);
      CHECK(e >= b);
      next = e;
    }
    CHECK(next == blocks.size());
  }
  CHECK(message_of([&] { study::sweep_shard_range(blocks, {4, 3}); }) == "sweep shard 4/3: out of range");
}

TEST_CASE("merge_sweep_shards: 1, 2 and 3 shards in any order give the whole sweep; errors named") {
  const auto base = darkbert::test::scratch_dir("study_sweep_shards");
  const auto whole = whole_sweep();
  for (int n = 1; n <= 3; ++n) {
    std::vector<fs::path> dirs;
    for (int k = 1; k <= n; ++k) {
      dirs.push_back(base / std::string("n").append(std::to_string(n)) / std::string("s").append(std::to_string(k)));
      write_part(dirs.back(), k, n, sweep_fingerprint);
    }
    do {
      const auto r = study::merge_sweep_shards(dirs, sweep_fingerprint);
      CHECK(r.baseline == whole.baseline);
      CHECK(same_values(r.head_scores, whole.head_scores));
      CHECK(same_values(r.layer_scores, whole.layer_scores));
      CHECK(r.block_evaluations == whole.block_evaluations);
      CHECK(r.seconds == doctest::Approx(0.5 * n));
      CHECK(r.summary().dump() != "");
      CHECK(r.task == "SST-2");
      CHECK(r.seed == 2);
    } while (std::next_permutation(dirs.begin(), dirs.end()));
  }
  const fs::path n3 = base / "n3", n2 = base / "n2";
  CHECK(message_of([&] { study::merge_sweep_shards({n3 / "s1", n3 / "s3"}, sweep_fingerprint); }) ==
        "sweep merge: ablations missing from the shards given:\n  shard 2/3 should have had: L1H0, L1H1, L1H2, L1H3");
  CHECK(message_of([&] { study::merge_sweep_shards({n2 / "s1", n2 / "s2", n3 / "s2"}, sweep_fingerprint); }) ==
        "sweep merge: ablation L1H0 is in two shards: " + (n2 / "s1").string() + " and " + (n3 / "s2").string());
  write_part(base / "foreign", 1, 1, {{"sweep", 1}, {"model", "m"}, {"max_examples", 32}});
  CHECK(message_of([&] { study::merge_sweep_shards({base / "foreign"}, sweep_fingerprint); }) ==
        (base / "foreign").string() + ": sweep shard 1/1 belongs to another sweep (max_examples differ from this one's); "
                                      "merge shards run with the same options");
  CHECK(message_of([&] { study::merge_sweep_shards({base}, sweep_fingerprint); }).find(base.string() + ": no sweep_shard.json") == 0);
}

TEST_CASE("sweep_shard_starts: every shard's range in one pass, against the rule computed shard by shard") {
  for (const auto& shape : {std::pair{3, 4}, std::pair{12, 12}, std::pair{1, 1}, std::pair{6, 8}}) {
    const int layers = shape.first;  // named locals: clang 14's CAPTURE cannot take structured bindings
    const auto blocks = study::sweep_ablation_blocks(layers, shape.second);
    long total = 0;
    for (long b : blocks) total += b;
    for (int n : {1, 2, 3, 5, 7, 16, 100, 200}) {
      CAPTURE(layers);
      CAPTURE(n);
      const auto starts = study::detail::sweep_shard_starts(blocks, n);
      REQUIRE(starts.size() == static_cast<std::size_t>(n) + 1);
      CHECK(starts[static_cast<std::size_t>(n)] == blocks.size());
      for (int k = 0; k < n; ++k) {  // the first ablation whose preceding blocks * N reach k * total
        std::size_t first = blocks.size();
        long before = 0;
        for (std::size_t i = 0; i < blocks.size(); before += blocks[i++])
          if (before * n >= k * total) {
            first = i;
            break;
          }
        CHECK(starts[static_cast<std::size_t>(k)] == first);
      }
    }
  }
}

TEST_CASE("merge_sweep_shards: a NaN score or baseline goes through; a damaged file is an error naming it") {
  const auto base = darkbert::test::scratch_dir("study_sweep_shards_damaged");
  // NaN (a correlation of constant predictions) is written as results files write it and read back as NaN.
  auto part = whole_sweep();
  part.baseline = std::numeric_limits<double>::quiet_NaN();
  part.head_scores(1, 2) = std::numeric_limits<double>::quiet_NaN();
  study::write_sweep_shard(base / "nan", part, sweep_fingerprint, {1, 1}, {0, 15}, 9);
  const auto merged = study::merge_sweep_shards({base / "nan"}, sweep_fingerprint);
  CHECK(std::isnan(merged.baseline));
  CHECK(std::isnan(merged.head_scores(1, 2)));
  CHECK(merged.head_scores(1, 3) == whole_sweep().head_scores(1, 3));

  // One field at a time made wrong in a good shard file: each refused with the file's name and the key.
  write_part(base / "good", 1, 1, sweep_fingerprint);
  const auto file = base / "good" / "sweep_shard.json";
  const auto good = darkbert::read_json_file(file);
  const std::vector<std::pair<const char*, nlohmann::json>> damage = {
      {"layers", "3"}, {"heads", -4}, {"begin", 0.5}, {"end", nullptr}, {"shard", "1"}, {"seed", -2},
      {"examples", "40"}, {"block_evaluations", "many"}, {"baseline_blocks", 1.5}, {"task", 3}, {"metric", nullptr},
      {"policy", false}, {"model", 1}, {"data", nlohmann::json::array()}, {"causal", "no"}, {"baseline", "high"},
      {"seconds", "soon"}, {"scores", "none"}, {"scores", nlohmann::json::array({0.5, "x"})}};
  for (const auto& entry : damage) {
    const char* key = entry.first;
    CAPTURE(key);
    auto j = good;
    j[key] = entry.second;
    const auto dir = base / (std::string("damaged-") + key);
    darkbert::test::write_file(dir / "sweep_shard.json", j.dump());
    const auto message = message_of([&] { study::merge_sweep_shards({dir}, sweep_fingerprint); });
    CHECK(message.find((dir / "sweep_shard.json").string()) != std::string::npos);
    CHECK(message.find(key) != std::string::npos);
  }
  for (const char* key : {"layers", "scores", "causal"}) {
    CAPTURE(key);
    auto j = good;
    j.erase(key);
    const auto dir = base / (std::string("missing-") + key);
    darkbert::test::write_file(dir / "sweep_shard.json", j.dump());
    CHECK(message_of([&] { study::merge_sweep_shards({dir}, sweep_fingerprint); }).find((dir / "sweep_shard.json").string()) == 0);
  }

  // A shape or shard count out of range, and a shape the files hold too few scores for: refused before any
  // allocation for it.
  auto write_changed = [&](const std::string& name, const nlohmann::json& changes) {
    auto j = good;
    for (const auto& [key, value] : changes.items()) j[key] = value;
    darkbert::test::write_file(base / name / "sweep_shard.json", j.dump());
    return message_of([&] { study::merge_sweep_shards({base / name}, sweep_fingerprint); });
  };
  CHECK(write_changed("huge", {{"layers", 1000000}, {"heads", 1000000}}) ==
        (base / "huge" / "sweep_shard.json").string() + ": a sweep of 1000000 layers x 1000000 heads is out of range");
  CHECK(write_changed("zero", {{"layers", 0}}).find("a sweep of 0 layers x 4 heads is out of range") != std::string::npos);
  CHECK(write_changed("shards", {{"shard", 2}, {"shards", 1}}) ==
        (base / "shards" / "sweep_shard.json").string() +
            ": shard 2/1 is out of range (1 <= K <= N <= 999999, as --shard takes them)");
  CHECK(write_changed("many", {{"shards", 1000000}}).find("shard 1/1000000 is out of range") != std::string::npos);
  CHECK(write_changed("wide", {{"layers", 4000}, {"heads", 60000}}) ==
        "sweep merge: the shards given hold 15 scores, a sweep of 4000 layers x 60000 heads has 240004000 ablations");
}
