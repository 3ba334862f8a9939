#pragma once
/// @file
/// One §3.6 sweep (study/disable_heads.hpp) split over N processes by ablation: shard K runs a contiguous
/// range of the ablation list (every head layer-major, then every layer), balanced by the transformer
/// blocks each ablation runs with the prefix cache, and writes `sweep_shard.json` (the sweep's fingerprint,
/// K, N, the range, the baseline and the range's scores, exactly as doubles, NaN as "nan" the way results
/// files write it). The merge checks the shards, every field of each, with errors naming the file,
/// and puts the scores side by side: the result is the single run's, bit for bit, apart from the wall
/// time (`seconds`). Every shard scores the baseline itself (the prefix cache needs its hidden states).
///
/// @code
/// const auto range = darkbert::study::sweep_shard_range(sweep_blocks(config), {.index = 2, .count = 3});
/// auto part = darkbert::study::disable_heads(model, inputs, {.ablations = range});
/// darkbert::study::write_sweep_shard("s2", part, fingerprint, {2, 3}, range, baseline_blocks);
/// auto whole = darkbert::study::merge_sweep_shards({"s1", "s2", "s3"}, fingerprint);   // = disable_heads(...)
/// @endcode

#include <cmath>       // std::isnan
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
#include "darkbert/model/config.hpp"  // ModelConfig::max_layers, max_hidden_size
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

namespace detail {

// Every shard's first ablation for N shards, and the end, in one pass: shard k is [starts[k - 1], starts[k]).
// Shard k starts at the first ablation whose preceding blocks reach (k-1)/N of the total.
inline std::vector<std::size_t> sweep_shard_starts(const std::vector<long>& blocks, int n) {
  long total = 0;
  for (long b : blocks) total += b;
  std::vector<std::size_t> starts(static_cast<std::size_t>(n) + 1, blocks.size());
  std::size_t i = 0;
  long before = 0;
  for (int k = 0; k < n; ++k) {  // the first index whose preceding blocks * N >= k * total
    while (i < blocks.size() && before * n < k * total) before += blocks[i++];
    starts[static_cast<std::size_t>(k)] = before * n >= k * total ? i : blocks.size();
  }
  return starts;
}

}  // namespace detail

/// The ablations [begin, end) of shard `s`: contiguous ranges cutting the summed blocks into N near-equal
/// parts (shard K starts at the first ablation whose preceding blocks reach (K-1)/N of the total).
inline std::pair<std::size_t, std::size_t> sweep_shard_range(const std::vector<long>& blocks, ShardSpec s) {
  require(s.count >= 1 && s.index >= 1 && s.index <= s.count, "sweep shard ", s.index, "/", s.count, ": out of range");
  const auto starts = detail::sweep_shard_starts(blocks, s.count);
  return {starts[static_cast<std::size_t>(s.index - 1)], starts[static_cast<std::size_t>(s.index)]};
}

namespace detail {

// "L2H3" for a head ablation, "layer 2" for a layer ablation.
inline std::string ablation_name(std::size_t a, Index layers, Index heads) {
  const auto n = static_cast<std::size_t>(layers * heads);
  if (a < n) return "L" + std::to_string(a / static_cast<std::size_t>(heads)) + "H" + std::to_string(a % static_cast<std::size_t>(heads));
  return "layer " + std::to_string(a - n);
}

// Checks every field the merge reads, so that a damaged file is an error naming it rather than the JSON
// library's, and a sweep's shape is bounded as a config's is.
inline void check_sweep_shard_fields(const nlohmann::json& j, const std::string& source) {
  for (const char* key : {"shard", "shards", "begin", "end", "layers", "heads", "seed", "examples", "block_evaluations",
                          "baseline_blocks"})
    unsigned_field(j, key, source);
  for (const char* key : {"task", "metric", "policy", "model", "data"}) string_field(j, key, source);
  bool_field(j, "causal", source);
  number_field(j, "baseline", source);
  number_field(j, "seconds", source);
  numbers_field(j, "scores", source);
  const auto layers = j["layers"].get<std::uint64_t>(), heads = j["heads"].get<std::uint64_t>();
  require(layers >= 1 && layers <= static_cast<std::uint64_t>(ModelConfig::max_layers) && heads >= 1 &&
              heads <= static_cast<std::uint64_t>(ModelConfig::max_hidden_size),
          source, ": a sweep of ", layers, " layers x ", heads, " heads is out of range");
  const auto shard = j["shard"].get<std::uint64_t>(), shards = j["shards"].get<std::uint64_t>();
  require(shard >= 1 && shard <= shards && shards <= 999999, source, ": shard ", shard, "/", shards,
          " is out of range (1 <= K <= N <= 999999, as --shard takes them)");
}

}  // namespace detail

/// Writes `dir/sweep_shard.json`: the part `part` of a sweep (ablations `range`, the others NaN).
/// `baseline_blocks` is what its baseline forward ran (batches x layers), counted once when merged.
inline void write_sweep_shard(const std::filesystem::path& dir, const DisableHeadsResult& part, const nlohmann::json& fingerprint,
                              ShardSpec s, std::pair<std::size_t, std::size_t> range, long baseline_blocks) {
  nlohmann::json scores = nlohmann::json::array();
  const auto heads = static_cast<std::size_t>(part.heads()), n = static_cast<std::size_t>(part.layers()) * heads;
  for (std::size_t a = range.first; a < range.second; ++a)
    scores.push_back(darkbert::detail::json_number(a < n ? part.head_scores(static_cast<Index>(a / heads), static_cast<Index>(a % heads))
                                                         : part.layer_scores(static_cast<Index>(a - n), 0)));
  const nlohmann::json j = {{"fingerprint", fingerprint}, {"shard", s.index}, {"shards", s.count},
                            {"begin", range.first}, {"end", range.second}, {"layers", part.layers()}, {"heads", part.heads()},
                            {"task", part.task}, {"metric", part.metric}, {"policy", part.policy}, {"model", part.model},
                            {"data", part.provenance}, {"seed", part.seed}, {"examples", part.examples}, {"causal", part.causal},
                            {"baseline", darkbert::detail::json_number(part.baseline)}, {"scores", scores}, {"seconds", part.seconds},
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
    detail::check_sweep_shard_fields(j, file.string());
    const auto differing = fingerprint_differences(fingerprint, j["fingerprint"]);
    require(differing.empty(), dir.string(), ": sweep shard ", j.value("shard", 0), "/", j.value("shards", 0),
            " belongs to another sweep (", differing, " differ from this one's); merge shards run with the same options");
    shards.push_back(std::move(j));
  }
  const auto& first = shards.front();
  const auto layers = first.at("layers").get<Index>(), heads = first.at("heads").get<Index>();
  const std::size_t count = static_cast<std::size_t>(layers * heads + layers);
  // Every ablation must be in one of the files. Past 2^20 ablations (BERT-large has 408) the files must
  // hold that many scores before memory is taken for them; below, what is missing is named further down.
  std::size_t held = 0;
  for (const auto& j : shards) held += j.at("scores").size();
  require(held >= count || count <= (std::size_t{1} << 20), "sweep merge: the shards given hold ", held,
          " scores, a sweep of ", layers, " layers x ", heads, " heads has ", count, " ablations");
  std::vector<int> owner(count, -1);
  std::vector<double> scores(count, 0.0);
  const double first_baseline = detail::number_field(first, "baseline", (dirs.front() / "sweep_shard.json").string());
  DisableHeadsResult r;
  long blocks = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const auto& j = shards[s];
    const auto source = (dirs[s] / "sweep_shard.json").string();
    const auto begin = j.at("begin").get<std::size_t>(), end = j.at("end").get<std::size_t>();
    require(begin <= end && end <= count && j.at("scores").size() == end - begin, source,
            ": its range [", begin, ", ", end, ") and ", j.at("scores").size(), " scores do not fit ", count, " ablations");
    const double baseline = detail::number_field(j, "baseline", source);
    require(baseline == first_baseline || (std::isnan(baseline) && std::isnan(first_baseline)), "sweep merge: ",
            dirs[s].string(), " and ", dirs.front().string(), " scored different baselines (", baseline, " and ",
            first_baseline, ")");
    const auto part_scores = detail::numbers_field(j, "scores", source);
    for (std::size_t a = begin; a < end; ++a) {
      require(owner[a] < 0, "sweep merge: ablation ", detail::ablation_name(a, layers, heads), " is in two shards: ",
              owner[a] < 0 ? std::string() : dirs[static_cast<std::size_t>(owner[a])].string(), " and ", dirs[s].string());
      owner[a] = static_cast<int>(s);
      scores[a] = part_scores[a - begin];
    }
    r.seconds += detail::number_field(j, "seconds", source);
    blocks += j.at("block_evaluations").get<long>() - (s > 0 ? j.at("baseline_blocks").get<long>() : 0);
  }
  std::string missing;
  const int n = first.at("shards").get<int>();
  const auto starts = detail::sweep_shard_starts(sweep_ablation_blocks(static_cast<int>(layers), static_cast<int>(heads)), n);
  for (int k = 1; k <= n; ++k) {
    const auto b = starts[static_cast<std::size_t>(k - 1)], e = starts[static_cast<std::size_t>(k)];
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
  r.baseline = first_baseline;
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
