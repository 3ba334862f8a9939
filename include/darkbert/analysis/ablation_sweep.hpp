#pragma once
/// @file
/// The ablation sweep (the paper's §3.6 "disabling heads and layers"): evaluate a task metric with no
/// ablation, with every single head ablated, with every whole layer ablated, and with any extra head sets.
///
/// @code
/// darkbert::AblationSweep<float> sweep(model, batches, labels, darkbert::accuracy_metric);
/// auto result = sweep.run();                 // prefix-cached
/// result.head_scores(3, 7);                  // metric with head 7 of layer 3 made uniform
/// @endcode
///
/// Prefix caching: an ablation at layer l cannot change anything below l, so for every batch the baseline
/// forward keeps its hidden states, and each ablation resumes at its lowest layer from hidden_states[l].
/// Per batch this costs sum over ablations of (layers - l) blocks instead of layers blocks each; for a full
/// 12 x 12 sweep with layer ablations that is 1026 instead of 1884 block evaluations (1.84x fewer).
/// `run_naive()` recomputes every ablation from the embeddings, for comparison; both give identical numbers.
///
/// One sweep split over processes: set_ablation_range(begin, end) runs a contiguous part of the ablation list
/// (heads layer-major, then layers, then added sets); every part scores the same baseline, and the parts'
/// scores put side by side are the whole sweep's, bit for bit (each ablation's forward does not depend on
/// which others run).

#include <chrono>      // std::chrono::steady_clock
#include <functional>  // std::function
#include <limits>      // std::numeric_limits (ablations outside the range)
#include <optional>    // std::optional
#include <utility>     // std::pair
#include <string>      // std::string
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../core/progress.hpp"
#include "../core/threads.hpp"
#include "../hooks/masking_policy.hpp"
#include "../model/transformer.hpp"
#include "predictions.hpp"  // append_sequence_predictions

namespace darkbert {


/// The scores of one AblationSweep run.
struct SweepResult {
  double baseline = 0;  ///<  metric with nothing ablated
  Matrix<double> head_scores;        ///< [layers, heads]: metric with that head ablated
  std::vector<double> layer_scores;  ///< [layers]: metric with the whole layer ablated
  std::vector<double> set_scores;    ///< one per extra head set, in the order given
  double seconds = 0;                ///< wall time of the sweep
  long block_evaluations = 0;        ///< transformer blocks run (the work the prefix cache saves)
};

/// The paper's §3.6 sweep: the task metric with each head, each layer and each added head set disabled.
/// @code
/// darkbert::AblationSweep<float> sweep(model, batches, labels, darkbert::accuracy_metric);
/// darkbert::SweepResult r = sweep.run();   // r.head_scores(3, 7): accuracy with head 3.7 disabled
/// @endcode
template <class T>
class AblationSweep {
 public:
  /// A sweep of a sequence classifier over `batches` (one label per example), ablating with `policy`
  /// (the paper's uniform pattern by default); throws if the model has no classifier or the counts differ.
  AblationSweep(const Transformer<T>& model, std::vector<Batch> batches, std::vector<double> labels, TaskMetric metric,
                MaskingPolicy<T> policy = uniform_policy<T>())
      : model_(model), batches_(std::move(batches)), labels_(std::move(labels)), metric_(std::move(metric)),
        policy_(std::move(policy)) {
    require(model_.params().task_heads.classifier.has_value(),
            "AblationSweep: the model has no sequence classification head (", model_.config().architecture, ")");
    Index examples = 0;
    for (const auto& b : batches_) examples += b.batch_size;
    require(examples == static_cast<Index>(labels_.size()), "AblationSweep: ", examples, " examples but ",
            labels_.size(), " labels");
  }

  /// Extra head sets to evaluate (e.g. all heads of one pattern type), each ablated together.
  void add_head_set(std::vector<HeadRef> heads) { sets_.push_back(std::move(heads)); }
  /// Whether to draw a progress bar on stderr.
  void set_show_progress(bool show) { show_progress_ = show; }
  /// Runs only ablations [begin, end) of the list (every head layer-major, every layer, every added set);
  /// the others score NaN. For a sweep split over processes (study/sweep_shards.hpp).
  void set_ablation_range(std::size_t begin, std::size_t end) { range_ = std::pair{begin, end}; }
  /// Ablations in the full list.
  std::size_t ablation_count() const { return ablations().size(); }
  /// Transformer blocks each ablation runs per batch with the prefix cache: its share of the sweep's cost.
  std::vector<long> ablation_blocks() const {
    std::vector<long> blocks;
    for (const auto& a : ablations()) blocks.push_back(model_.config().num_layers - a.first_layer);
    return blocks;
  }

  /// Runs the sweep, resuming each ablation from the cached hidden states below its layer.
  SweepResult run() const { return sweep(true); }
  /// Runs the same sweep recomputing every layer (identical scores; for checking and timing the cache).
  SweepResult run_naive() const { return sweep(false); }

 private:
  struct Ablation {
    std::vector<HeadRef> heads;
    int first_layer;
  };

  std::vector<Ablation> ablations() const {
    const auto& c = model_.config();
    std::vector<Ablation> list;
    for (int l = 0; l < c.num_layers; ++l)
      for (int h = 0; h < c.num_heads; ++h) list.push_back({{{l, h}}, l});
    for (int l = 0; l < c.num_layers; ++l) list.push_back({{{l, all_heads}}, l});
    for (const auto& set : sets_) {
      require(!set.empty(), "AblationSweep: empty head set");
      int first = c.num_layers;
      for (const auto& h : set) first = std::min(first, h.layer);
      list.push_back({set, first});
    }
    return list;
  }

  SweepResult sweep(bool cached) const {
    const auto& c = model_.config();
    const auto list = ablations();
    const std::size_t begin = range_ ? range_->first : 0, end = range_ ? range_->second : list.size();
    require(begin <= end && end <= list.size(), "AblationSweep: ablation range [", begin, ", ", end, ") outside the ",
            list.size(), " ablations");
    std::vector<std::vector<double>> predictions(list.size());
    std::vector<double> baseline;
    SweepResult result;
    Progress progress(cached ? "sweep (prefix-cached)" : "sweep (naive)",
                      static_cast<long>(batches_.size() * (end - begin + 1)), show_progress_);
    ForwardResult<T> base, ablated;  // reused buffers across the whole sweep
    if (!batches_.empty()) model_.forward_into(batches_.front(), {}, base);  // warm-up, outside the timing
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches_) {
      adopt_thread_share();  // a worker beside others takes the threads they gave back (core/threads.hpp)
      ForwardOptions<T> options;
      options.keep_attentions = false;
      options.keep_hidden_states = cached;  // the prefix cache
      options.token_logits = false;
      model_.forward_into(batch, options, base);
      append_sequence_predictions(base, baseline);
      result.block_evaluations += c.num_layers;
      progress.advance();
      for (std::size_t a = begin; a < end; ++a) {
        MaskingPolicies<T> policies;
        policies.add(policy_, list[a].heads);
        ForwardOptions<T> ablate = options;
        ablate.keep_hidden_states = false;
        ablate.policies = &policies;
        if (cached) {
          ablate.start_layer = list[a].first_layer;
          ablate.start_hidden = base.hidden_states.data() +
                                static_cast<Index>(list[a].first_layer) * batch.tokens() * c.hidden_size;
        }
        model_.forward_into(batch, ablate, ablated);
        append_sequence_predictions(ablated, predictions[a]);
        result.block_evaluations += c.num_layers - ablate.start_layer;
        progress.advance();
      }
    }
    progress.finish();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.baseline = metric_(baseline, labels_);
    result.head_scores.resize(c.num_layers, c.num_heads);
    auto score = [&](std::size_t a) {
      return a >= begin && a < end ? metric_(predictions[a], labels_) : std::numeric_limits<double>::quiet_NaN();
    };
    std::size_t a = 0;
    for (int l = 0; l < c.num_layers; ++l)
      for (int h = 0; h < c.num_heads; ++h) result.head_scores(l, h) = score(a++);
    for (int l = 0; l < c.num_layers; ++l) result.layer_scores.push_back(score(a++));
    for (std::size_t s = 0; s < sets_.size(); ++s) result.set_scores.push_back(score(a++));
    return result;
  }

  const Transformer<T>& model_;
  std::vector<Batch> batches_;
  std::vector<double> labels_;
  TaskMetric metric_;
  MaskingPolicy<T> policy_;
  std::vector<std::vector<HeadRef>> sets_;
  bool show_progress_ = true;
  std::optional<std::pair<std::size_t, std::size_t>> range_;  // set_ablation_range
};

}  // namespace darkbert
