#pragma once
/// @file
/// One §3.6 sweep (study/disable_heads.hpp) split over N processes by ablation: shard K runs a contiguous
/// range of the ablation list (every head layer-major, then every layer), balanced by the transformer
/// blocks each ablation runs with the prefix cache, and writes `sweep_shard.json` (the sweep's fingerprint,
/// K, N, the range, the baseline and the range's scores, exactly as doubles). The merge checks the shards
/// and puts the scores side by side: the result is the single run's, bit for bit, apart from the wall
/// time (`seconds`). Every shard scores the baseline itself (the prefix cache needs its hidden states).
///
/// @code
/// const auto range = darkbert::study::sweep_shard_range(sweep_blocks(config), {.index = 2, .count = 3});
/// auto part = darkbert::study::disable_heads(model, inputs, {.ablations = range});
/// darkbert::study::write_sweep_shard("s2", part, fingerprint, {2, 3}, range, baseline_blocks);
/// auto whole = darkbert::study::merge_sweep_shards({"s1", "s2", "s3"}, fingerprint);   // = disable_heads(...)
/// @endcode

#include <cstddef>     // std::size_t
#include <cstdint>     // std::uint64_t
#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/study/disable_heads.hpp"
#include "darkbert/study/shard_plan.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

/// Blocks each ablation of a layers x heads sweep runs per batch with the prefix cache (heads layer-major,
/// then layers): AblationSweep::ablation_blocks without a model.
inline std::vector<long> sweep_ablation_blocks(int layers, int heads) {
  std::vector<long> blocks;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) blocks.push_back(layers - l);
  for (int l = 0; l < layers; ++l) blocks.push_back(layers - l);
  return blocks;
}

/// The ablations [begin, end) of shard `s`: contiguous ranges cutting the summed blocks into N near-equal
/// parts (shard K starts at the first ablation whose preceding blocks reach (K-1)/N of the total).
inline std::pair<std::size_t, std::size_t> sweep_shard_range(const std::vector<long>& blocks, ShardSpec s) {
  require(s.count >= 1 && s.index >= 1 && s.index <= s.count, "sweep shard ", s.index, "/", s.count, ": out of range");
  long total = 0;
  for (long b : blocks) total += b;
  auto boundary = [&](long k) {  // the first index whose preceding blocks * N >= k * total
    if (k >= s.count) return blocks.size();
    long before = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (before * s.count >= k * total) return i;
      before += blocks[i];
    }
    return blocks.size();
  };
  return {boundary(s.index - 1), boundary(s.index)};
}

namespace detail {

// "L2H3" for a head ablation, "layer 2" for a layer ablation.
inline std::string ablation_name(std::size_t a, Index layers, Index heads) {
  const auto n = static_cast<std::size_t>(layers * heads);
  if (a < n) return "L" + std::to_string(a / static_cast<std::size_t>(heads)) + "H" + std::to_string(a % static_cast<std::size_t>(heads));
  return "layer " + std::to_string(a - n);
}

}  // namespace detail

/// Writes `dir/sweep_shard.json`: the part `part` of a sweep (ablations `range`, the others NaN).
/// `baseline_blocks` is what its baseline forward ran (batches x layers), counted once when merged.
inline void write_sweep_shard(const std::filesystem::path& dir, const DisableHeadsResult& part, const nlohmann::json& fingerprint,
                              ShardSpec s, std::pair<std::size_t, std::size_t> range, long baseline_blocks) {
  nlohmann::json scores = nlohmann::json::array();
  const auto heads = static_cast<std::size_t>(part.heads()), n = static_cast<std::size_t>(part.layers()) * heads;
  for (std::size_t a = range.first; a < range.second; ++a)
    scores.push_back(a < n ? part.head_scores(static_cast<Index>(a / heads), static_cast<Index>(a % heads))
                           : part.layer_scores(static_cast<Index>(a - n), 0));
  const nlohmann::json j = {{"fingerprint", fingerprint}, {"shard", s.index}, {"shards", s.count},
                            {"begin", range.first}, {"end", range.second}, {"layers", part.layers()}, {"heads", part.heads()},
                            {"task", part.task}, {"metric", part.metric}, {"policy", part.policy}, {"model", part.model},
                            {"data", part.provenance}, {"seed", part.seed}, {"examples", part.examples}, {"causal", part.causal},
                            {"baseline", part.baseline}, {"scores", scores}, {"seconds", part.seconds},
                            {"block_evaluations", part.block_evaluations}, {"baseline_blocks", baseline_blocks}};
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / "sweep_shard.json", j.dump(2) + "\n");
}

/// Checks the sweep shards in `dirs` (same fingerprint, every ablation in exactly one, the same baseline)
/// and returns the whole sweep: the single run's result, its `seconds` the shards' sum. Errors name the
/// folders and the ablations.
inline DisableHeadsResult merge_sweep_shards(const std::vector<std::filesystem::path>& dirs, const nlohmann::json& fingerprint) {
  require(!dirs.empty(), "sweep merge: no shard folders given");
  std::vector<nlohmann::json> shards;
  for (const auto& dir : dirs) {
    const auto file = dir / "sweep_shard.json";
    require(std::filesystem::is_regular_file(file), dir.string(), ": no sweep_shard.json, so not a finished sweep shard "
            "(darkbert sweep --shard K/N --out ", dir.string(), " writes it)");
    auto j = detail::read_json_file(file);
    require(j.is_object() && j.contains("fingerprint") && j.contains("scores"), file.string(), ": not a sweep shard");
    const auto differing = fingerprint_differences(fingerprint, j["fingerprint"]);
    require(differing.empty(), dir.string(), ": sweep shard ", j.value("shard", 0), "/", j.value("shards", 0),
            " belongs to another sweep (", differing, " differ from this one's); merge shards run with the same options");
    shards.push_back(std::move(j));
  }
  const auto& first = shards.front();
  const auto layers = first.at("layers").get<Index>(), heads = first.at("heads").get<Index>();
  const std::size_t count = static_cast<std::size_t>(layers * heads + layers);
  std::vector<int> owner(count, -1);
  std::vector<double> scores(count, 0.0);
  DisableHeadsResult r;
  long blocks = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const auto& j = shards[s];
    const auto begin = j.at("begin").get<std::size_t>(), end = j.at("end").get<std::size_t>();
    require(begin <= end && end <= count && j.at("scores").size() == end - begin, (dirs[s] / "sweep_shard.json").string(),
            ": its range [", begin, ", ", end, ") and ", j.at("scores").size(), " scores do not fit ", count, " ablations");
    const double baseline = j.at("baseline").get<double>();
    require(baseline == first.at("baseline").get<double>(), "sweep merge: ", dirs[s].string(), " and ", dirs.front().string(),
            " scored different baselines (", baseline, " and ", first.at("baseline").get<double>(), ")");
    for (std::size_t a = begin; a < end; ++a) {
      require(owner[a] < 0, "sweep merge: ablation ", detail::ablation_name(a, layers, heads), " is in two shards: ",
              owner[a] < 0 ? std::string() : dirs[static_cast<std::size_t>(owner[a])].string(), " and ", dirs[s].string());
      owner[a] = static_cast<int>(s);
      scores[a] = j.at("scores")[a - begin].get<double>();
    }
    r.seconds += j.at("seconds").get<double>();
    blocks += j.at("block_evaluations").get<long>() - (s > 0 ? j.at("baseline_blocks").get<long>() : 0);
  }
  std::string missing;
  const int n = first.at("shards").get<int>();
  const auto blocks_of = sweep_ablation_blocks(static_cast<int>(layers), static_cast<int>(heads));
  for (int k = 1; k <= n; ++k) {
    const auto [b, e] = sweep_shard_range(blocks_of, {k, n});
    std::vector<std::string> names;
    for (std::size_t a = b; a < e; ++a)
      if (owner[a] < 0) names.push_back(detail::ablation_name(a, layers, heads));
    if (!names.empty())
      missing += "\n  shard " + std::to_string(k) + "/" + std::to_string(n) + " should have had: " + detail::join_names(names);
  }
  for (std::size_t a = 0; a < count && missing.empty(); ++a)  // ranges of another N
    if (owner[a] < 0) missing = "\n  " + detail::ablation_name(a, layers, heads) + " and maybe more";
  require(missing.empty(), "sweep merge: ablations missing from the shards given:", missing);

  r.task = first.at("task").get<std::string>(), r.metric = first.at("metric").get<std::string>();
  r.policy = first.at("policy").get<std::string>(), r.model = first.at("model").get<std::string>();
  r.provenance = first.at("data").get<std::string>(), r.seed = first.at("seed").get<std::uint64_t>();
  r.examples = first.at("examples").get<std::size_t>(), r.causal = first.at("causal").get<bool>();
  r.baseline = first.at("baseline").get<double>();
  r.block_evaluations = blocks;
  r.head_scores = make_head_matrix<double>("head_scores", layers, heads);
  for (Index l = 0; l < layers; ++l)
    for (Index h = 0; h < heads; ++h) r.head_scores(l, h) = scores[static_cast<std::size_t>(l * heads + h)];
  r.layer_scores = make_table<double>("layer_scores", "layer", darkbert::detail::index_names(layers), "metric", {r.metric});
  for (Index l = 0; l < layers; ++l) r.layer_scores(l, 0) = scores[static_cast<std::size_t>(layers * heads + l)];
  r.head_scores.examples = r.layer_scores.examples = r.examples;
  return r;
}

}  // namespace darkbert::study
