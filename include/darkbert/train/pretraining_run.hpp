#pragma once
/// @file
/// A whole pretraining run from a recipe, as `darkbert pretrain` and the embedded default models run it:
/// the corpus of the data root (corpus/train.txt, one sentence per line, documents separated by blank
/// lines) with the real vocabulary (vocab/bert-base-uncased, vocab/gpt2); BERT with masked LM +
/// next-sentence prediction, GPT-2 with causal LM.
///
/// In the output folder:
///   run.json          the recipe (a resumed run continues with it)
///   eval.csv          at every evaluation: the held-out loss and accuracy (corpus/heldout.txt) and, on the
///                     first probe_pairs MRPC dev pairs, the strongest head of each §3.1 pattern: attention
///                     on the neighbouring tokens (positional), on [CLS]/[SEP] (vertical), inside the own
///                     segment (block); drawn as heldout_accuracy.png and head_masses.png
///   head_masses.csv   every head's three masses at every evaluation
///   checkpoint/       replaced atomically every checkpoint_every steps (train/training_checkpoint.hpp);
///                     with resume the run continues from it and ends bit-identical to an uninterrupted one
///   config.json, model.safetensors, vocabulary: the trained model, a Hugging Face folder
///
/// @code
/// auto recipe = darkbert::named_recipe("mini", "bert");
/// auto result = darkbert::run_pretraining(darkbert::DataRoot::from_environment(), {.out = "mini-bert", .recipe = recipe});
/// std::cout << result.heldout.accuracy << "\n";
/// @endcode

#include <algorithm>   // std::min, std::max
#include <charconv>    // std::from_chars
#include <cmath>       // std::ceil
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <optional>    // std::optional
#include <ostream>     // std::ostream
#include <sstream>     // std::istringstream, std::ostringstream
#include <string>      // std::string
#include <vector>      // std::vector

#include <nlohmann/json.hpp>

#include "../analysis/head_pattern_probe.hpp"
#include "../core/atomic_file.hpp"
#include "../data/glue.hpp"
#include "../data/root.hpp"
#include "../io/checkpoint.hpp"  // read_json_file
#include "../tokenizer/tokenizer_files.hpp"
#include "../viz/line_chart.hpp"
#include "grow_depth.hpp"
#include "position_init.hpp"
#include "pretrain.hpp"
#include "pretraining_recipe.hpp"
#include "query_key_init.hpp"
#include "training_checkpoint.hpp"

namespace darkbert {

/// What run_pretraining is asked to do.
struct PretrainingRunOptions {
  std::filesystem::path out;  ///< the output folder (see the top of this file)
  PretrainRecipe recipe;      ///< ignored on resume: the run's own run.json wins
  std::int64_t steps = 0;     ///< if set, the run's length instead of the recipe's (also on resume) ...
  double minutes = 0;         ///< ... or its time budget
  bool resume = false;        ///< continue from out/checkpoint if there is one
  bool show_progress = true;  ///< progress bars on stderr
  std::ostream* log = nullptr;  ///< the settings, evaluations and resumption (may be null)
  std::string progress_label = "pretrain";  ///< the progress bar's name (two models training at once)
  std::function<void(const PretrainState&)> after_step;  ///< e.g. stopping a test run at a given step
};

/// How a run ended.
struct PretrainingResult {
  HeldoutScore heldout;  ///< the final held-out score
  PretrainState state;   ///< steps, tokens and training seconds
  PretrainRecipe recipe; ///< the settings it ran with
};

namespace detail {

// Keeps the header and the rows of a CSV log whose first field (the step) is at most `step`: rows logged
// after the checkpoint a resumed run starts from are logged again by it.
inline void trim_log(const std::filesystem::path& path, std::int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  std::size_t number = 0;
  for (bool header = true; std::getline(in, line); header = false) {
    ++number;
    if (header) {
      kept += line + "\n";
      continue;
    }
    std::int64_t logged = 0;
    const auto field = line.substr(0, line.find(','));
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), logged);
    if (ec != std::errc{} || end != field.data() + field.size())
      fail(path.string(), ":", number, ": the step '", field, "' is not a number (a damaged log; remove the row)");
    if (logged <= step) kept += line + "\n";
  }
  in.close();
  write_file_atomically(path, kept);
}

// The curves of eval.csv as figures: held-out accuracy, and the strongest head of each §3.1 pattern. A causal
// model sees no next token and GPT-2 has no [CLS]/[SEP]: its positional curve is the previous token alone,
// and it has no vertical curve.
inline void plot_eval_log(const std::filesystem::path& out, const std::string& model_name, bool causal) {
  std::ifstream in(out / "eval.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<double> step, accuracy, neighbour, special, segment;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    if (f.size() < 13) continue;
    step.push_back(std::stod(f[0]));
    accuracy.push_back(std::stod(f[5]));
    neighbour.push_back(std::stod(f[7]));
    special.push_back(std::stod(f[9]));
    segment.push_back(std::stod(f[11]));
  }
  write_line_chart(out / "heldout_accuracy.png", {{"held-out token accuracy", step, accuracy}},
                   {.title = model_name + ": held-out accuracy", .x_label = "training step", .y_label = "accuracy", .y_min = 0.0});
  std::vector<LineSeries> patterns;
  patterns.push_back({causal ? "previous token (positional)" : "previous + next token (positional)", step, neighbour});
  if (!causal) patterns.push_back({"[CLS] + [SEP] (vertical)", step, special});
  patterns.push_back({"own segment (block)", step, segment});
  write_line_chart(out / "head_masses.png", patterns,
                   {.title = model_name + ": strongest head of each pattern (MRPC dev)", .x_label = "training step",
                    .y_label = "attention mass", .y_min = 0.0, .y_max = 1.0});
}

}  // namespace detail

/// Runs (or, with resume, continues) the pretraining of `o.recipe` into `o.out`; see the top of this file.
inline PretrainingResult run_pretraining(const DataRoot& root, const PretrainingRunOptions& o) {
  namespace fs = std::filesystem;
  const fs::path checkpoint_dir = o.out / "checkpoint";
  PretrainRecipe r = o.recipe;
  PretrainState state;
  std::optional<Transformer<float>> loaded;
  char line[1024];
  auto say = [&](const char* text) {
    if (o.log) *o.log << text << std::flush;
  };
  if (o.resume && find_training_checkpoint(checkpoint_dir)) {
    r = read_json_file(o.out / "run.json").get<PretrainRecipe>();  // the run's own settings win
    auto [model, json] = load_training_checkpoint<float>(checkpoint_dir);
    loaded.emplace(std::move(model));
    state = PretrainState::from_json(json, (checkpoint_dir / "state.json").string());
    std::snprintf(line, sizeof line, "resuming %s at step %lld (epoch %lld, example %lld)\n", o.out.string().c_str(),
                  static_cast<long long>(state.step), static_cast<long long>(state.epoch), static_cast<long long>(state.offset));
    say(line);
  } else if (o.resume) {
    say(("no checkpoint in " + o.out.string() + " yet: starting from scratch\n").c_str());
  }
  if (o.steps > 0 || o.minutes > 0) r.steps = o.steps, r.minutes = o.minutes;
  r.validate();
  const bool gpt2 = r.arch == "gpt2";
  const fs::path vocab_dir = root.find(gpt2 ? "vocab/gpt2" : "vocab/bert-base-uncased", "vocabulary", "see ../shared/data");
  const auto tokenizer = Tokenizer::from_directory(vocab_dir);
  const auto train = tokenize_corpus(root.find("corpus/train.txt", "pretraining corpus", "see ../shared/data"), tokenizer,
                                     {.max_documents = r.max_documents, .show_progress = o.show_progress});
  const auto heldout = tokenize_corpus(root.find("corpus/heldout.txt", "held-out corpus", "see ../shared/data"), tokenizer,
                                       {.show_progress = o.show_progress});
  PretrainingTaskOptions task_options{.max_length = r.seq,
                                      .masking = {.mask_prob = r.mask_prob,  // Google's cap of 20 at 15% of 128, scaled up with the rate
                                                  .max_predictions = std::max(20, static_cast<int>(std::ceil(r.seq * r.mask_prob)))},
                                      .predicted_fraction = r.predicted_fraction,
                                      .softmax_draws = static_cast<Index>(r.softmax_draws)};
  if (r.heldout_examples > 0) task_options.heldout_pairs = task_options.heldout_windows = r.heldout_examples;
  PretrainingTask task(gpt2 ? Family::gpt2 : Family::bert, train, heldout, tokenizer, task_options, r.task_seed());

  const ModelConfig config = recipe_config(r);
  // The §3.1 probe: MRPC dev pairs, as the paper's analysis feeds them, whole (up to the model's 128 or
  // more positions) whatever the training length, so that every run is measured on the same inputs; GPT-2's
  // as the study reads them, <|endoftext|> a <|endoftext|> b.
  auto mrpc = load_glue(root, GlueTask::mrpc, "dev");
  std::vector<Encoding> probe_inputs;
  for (std::size_t i = 0; i < std::min(r.probe_pairs, mrpc.examples.size()); ++i)
    probe_inputs.push_back(tokenizer.encode_pair(mrpc.examples[i].text_a, mrpc.examples[i].text_b,
                                                 {.max_length = static_cast<std::size_t>(config.max_sequence_length()),
                                                  .end_of_text_boundaries = true}));
  const HeadPatternProbe probe(std::move(probe_inputs));

  // A growing recipe starts with grow_from blocks (grow_depth.hpp).
  ModelConfig first_config = config;
  if (r.grow_from > 0) first_config.num_layers = r.grow_from;
  auto model = loaded ? std::move(*loaded) : Transformer<float>::random(first_config, TaskHeads::for_architecture(config), r.initial_weights_seed());
  if (!loaded) {
    init_positions(model.params().embeddings.position, r.position_init, r.position_rms, Transformer<float>::random_init_std);
    rescale_query_key(model.params(), r.qk_init_std, Transformer<float>::random_init_std);
  }
  require(model.config().num_layers == config.num_layers || model.config().num_layers == first_config.num_layers,
          (checkpoint_dir / "config.json").string(), ": the checkpoint has ", model.config().num_layers,
          " blocks; this run trains ", first_config.num_layers, " and then ", config.num_layers);
  std::optional<AdamW<float>> optimizer;  // a grown model gets a fresh one
  optimizer.emplace(model, AdamWOptions{.beta2 = r.adam_beta2, .weight_decay = r.weight_decay});
  if (loaded) restore_optimizer(checkpoint_dir, *optimizer);
  fs::create_directories(o.out);
  write_file_atomically(o.out / "run.json", nlohmann::json(r).dump(2) + "\n");
  const auto eval_csv = o.out / "eval.csv", heads_csv = o.out / "head_masses.csv";
  if (loaded) {
    detail::trim_log(eval_csv, state.step);
    detail::trim_log(heads_csv, state.step);
  } else {
    write_file_atomically(eval_csv, "step,tokens,train_seconds,train_loss,heldout_loss,heldout_accuracy,nsp_accuracy,"
                                    "max_neighbour,neighbour_head,max_special,special_head,max_segment,segment_head\n");
    write_file_atomically(heads_csv, "step,layer,head,neighbour_share,special_share,segment_share\n");
  }
  char decay_note[64] = "";  // a warm-up-stable-decay schedule; empty for the linear one
  char slices_note[48] = "";  // the batch in slices run side by side; empty for the whole batch
  if (r.batch_slices > 1) std::snprintf(slices_note, sizeof slices_note, " in %d slices", r.batch_slices);
  if (r.decay_fraction < 1) std::snprintf(decay_note, sizeof decay_note, ", decay over the last %g of the steps", r.decay_fraction);
  std::snprintf(line, sizeof line,
                "pretraining %s: %d layers x %d hidden x %d heads, FFN %d, %lld parameters; seq %d, batch %zu%s, lr %g, "
                "warm-up %lld%s, AdamW beta2 %g and weight decay %g, %s positions (rms %g), query and key weights at std %g, dropout %g (attention %g%s), mask %g, short phase %d tokens for %g of the steps, "
                "predicting %g of the positions%s; corpus %zu documents, %zu tokens\n",
                gpt2 ? "GPT-2" : "BERT", r.layers, r.hidden, r.heads, r.ff,
                static_cast<long long>(config.parameter_count()), r.seq, r.batch, slices_note, r.lr,
                static_cast<long long>(r.warmup),
                decay_note, r.adam_beta2, r.weight_decay,
                r.position_init.c_str(), r.position_rms, r.qk_init_std, r.dropout,
                recipe_config(r).attention_dropout,
                r.dropout_warmup > 0 ? ("; ramped up over " + std::to_string(r.dropout_warmup) + " steps").c_str() : "", r.mask_prob,
                r.short_seq, r.short_fraction, gpt2 ? r.predicted_fraction : r.mask_prob,
                r.softmax_draws > 0 ? (", sampled softmax of " + std::to_string(r.softmax_draws) + " draws").c_str() : "",
                train.documents(), train.tokens.size());
  say(line);
  if (r.grow_from > 0) {
    std::snprintf(line, sizeof line, "the first %lld steps with %d blocks, then %d (grow_depth.hpp)\n",
                  static_cast<long long>(r.grow_step()), r.grow_from, r.layers);
    say(line);
  }

  HeldoutScore last;
  auto evaluate = [&](const PretrainState& s, double train_loss) {
    last = task.evaluate(model);
    const auto summary = probe.measure(model, tokenizer.pad_id());
    const auto nb = max_over_heads(summary.neighbour_share), sp = max_over_heads(summary.special_share),
               sg = max_over_heads(summary.segment_share);
    auto where = [](const HeadMaximum& m) { return std::to_string(m.layer) + ":" + std::to_string(m.head); };
    std::ostringstream row, heads;
    row << s.step << ',' << s.tokens << ',' << s.seconds << ',' << train_loss << ',' << last.loss << ','
        << last.accuracy << ',' << last.next_sentence_accuracy << ',' << nb.value << ',' << where(nb) << ','
        << sp.value << ',' << where(sp) << ',' << sg.value << ',' << where(sg) << '\n';
    append_file_atomically(eval_csv, row.str(), "training log");
    for (Index l = 0; l < summary.neighbour_share.rows(); ++l)
      for (Index h = 0; h < summary.neighbour_share.cols(); ++h)
        heads << s.step << ',' << l << ',' << h << ',' << summary.neighbour_share(l, h) << ','
              << summary.special_share(l, h) << ',' << summary.segment_share(l, h) << '\n';
    append_file_atomically(heads_csv, heads.str(), "training log");
    detail::plot_eval_log(o.out, gpt2 ? "GPT-2" : "BERT", gpt2);
    std::snprintf(line, sizeof line,
                  "\n[step %lld] heldout loss %.4f accuracy %.4f%s | strongest heads: neighbour %.3f (%s) "
                  "[CLS]/[SEP] %.3f (%s) own segment %.3f (%s)\n",
                  static_cast<long long>(s.step), last.loss, last.accuracy,
                  last.next_sentence_accuracy >= 0 ? (" nsp " + std::to_string(last.next_sentence_accuracy)).c_str() : "",
                  nb.value, where(nb).c_str(), sp.value, where(sp).c_str(), sg.value, where(sg).c_str());
    say(line);
  };
  auto checkpoint = [&](const PretrainState& s) { save_training_checkpoint(checkpoint_dir, model, *optimizer, s.to_json()); };
  PretrainOptions options{.batch_size = r.batch, .batch_slices = r.batch_slices, .learning_rate = r.lr, .warmup_steps = r.warmup,
                          .decay_fraction = r.decay_fraction,
                          .steps = r.steps, .minutes = r.steps > 0 ? 0.0 : r.minutes,
                          .dropout_warmup_steps = r.dropout_warmup, .seed = r.seed,
                          .eval_every = r.eval_every, .checkpoint_every = r.checkpoint_every,
                          .show_progress = o.show_progress, .short_length = r.short_seq,
                          .short_fraction = r.short_fraction, .progress_label = o.progress_label};
  const PretrainCallbacks<float> callbacks{.evaluate = evaluate, .checkpoint = checkpoint, .after_step = o.after_step};
  if (model.config().num_layers < config.num_layers) {  // the shallow phase, then the blocks on top
    const auto grow_step = r.grow_step();
    options.stop_at = grow_step;
    state = pretrain(model, *optimizer, task, options, state, callbacks);
    model = with_identity_blocks(model, config.num_layers, r.initial_weights_seed() ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(grow_step)));
    optimizer.emplace(model, AdamWOptions{.beta2 = r.adam_beta2, .weight_decay = r.weight_decay});
    options.stop_at = 0;
    std::snprintf(line, sizeof line, "\n[step %lld] grown from %d to %d blocks (the new ones start as the identity); "
                  "the learning rate warms up again over %lld steps\n", static_cast<long long>(state.step), r.grow_from,
                  config.num_layers, static_cast<long long>(r.grow_warmup));
    say(line);
  }
  if (r.grow_from > 0) options.rewarm_at = r.grow_step(), options.rewarm_steps = r.grow_warmup;
  state = pretrain(model, *optimizer, task, options, state, callbacks);

  model.save(o.out);
  copy_tokenizer_files(vocab_dir, o.out);
  return {last, state, r};
}

}  // namespace darkbert
