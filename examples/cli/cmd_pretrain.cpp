// darkbert pretrain --arch bert|gpt2 --out DIR [--recipe mini|reference|tiny] [--minutes M | --steps N] [--resume]
//                   [--layers --hidden --heads --ff --seq --batch --lr --warmup --decay-fraction F] [--seed N] [--weights-seed N] [--data-seed N] [--max-documents N]
//                   [--eval-every N] [--checkpoint-every N] [--probe-pairs 200] [--heldout-examples N] [--grow-from N --grow-fraction F] [--batch-slices N]
//                   [--quiet]
//
// Pretrains a model from scratch on the corpus of the data root: a recipe (train/pretraining_recipe.hpp)
// with any field overridden by its flag, run by run_pretraining (train/pretraining_run.hpp: what DIR
// holds, the §3.1 head masses logged at every evaluation, atomic checkpoints and bit-identical --resume).
// Ends with one line:
//   heldout_accuracy=... heldout_loss=... steps=... tokens_per_s=...

#include <CLI/CLI.hpp>
#include <algorithm>  // std::max
#include <csignal>    // std::raise, SIGKILL
#include <cstdio>     // std::printf
#include <filesystem>  // std::filesystem
#include <iostream>   // std::cout
#include <limits>     // std::numeric_limits
#include <memory>     // std::make_shared
#include <optional>   // std::optional
#include <string>     // std::string

#include "commands.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/train/default_models.hpp"
#include "darkbert/train/pretraining_recipe.hpp"
#include "darkbert/train/pretraining_run.hpp"

namespace darkbert::cli {

struct PretrainCommand {
  std::filesystem::path out;
  std::string recipe = "mini", arch = "bert";
  double minutes = 0;
  std::int64_t steps = 0;
  bool resume = false, quiet = false;
  std::int64_t kill_after_step = 0;  // testing crash safety: SIGKILL this process after that step
  // Overrides (unset = the recipe's value).
  std::optional<int> layers, hidden, heads, ff, seq, short_seq, grow_from, batch_slices;
  std::optional<std::size_t> batch, max_documents, probe_pairs, heldout_examples;
  std::optional<double> lr, adam_beta2, weight_decay;
  std::optional<std::int64_t> warmup, weights_seed, data_seed, eval_every, checkpoint_every, softmax_draws, grow_warmup,
      dropout_warmup;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> position_init;
  std::optional<double> decay_fraction, dropout, attention_dropout, position_rms, qk_init_std, mask_prob, short_fraction, predicted_fraction,
      grow_fraction;

  PretrainRecipe settings() const {
    PretrainRecipe r = named_recipe(recipe, arch);
    auto set = [](auto& field, const auto& value) {
      if (value) field = *value;
    };
    set(r.layers, layers), set(r.hidden, hidden), set(r.heads, heads), set(r.ff, ff), set(r.seq, seq);
    set(r.batch, batch), set(r.lr, lr), set(r.adam_beta2, adam_beta2), set(r.weight_decay, weight_decay), set(r.warmup, warmup), set(r.decay_fraction, decay_fraction), set(r.seed, seed), set(r.weights_seed, weights_seed);
    set(r.data_seed, data_seed);
    set(r.max_documents, max_documents), set(r.eval_every, eval_every), set(r.checkpoint_every, checkpoint_every);
    set(r.probe_pairs, probe_pairs), set(r.heldout_examples, heldout_examples), set(r.position_init, position_init), set(r.dropout, dropout);
    set(r.attention_dropout, attention_dropout), set(r.dropout_warmup, dropout_warmup);
    set(r.position_rms, position_rms), set(r.qk_init_std, qk_init_std), set(r.mask_prob, mask_prob);
    set(r.short_seq, short_seq), set(r.short_fraction, short_fraction), set(r.predicted_fraction, predicted_fraction);
    set(r.softmax_draws, softmax_draws);
    set(r.grow_from, grow_from), set(r.grow_fraction, grow_fraction), set(r.grow_warmup, grow_warmup);
    set(r.batch_slices, batch_slices);
    return r;
  }
};

inline void run_pretrain_command(const PretrainCommand& cmd) {
  auto after_step = [&](const PretrainState& s) {
    if (cmd.kill_after_step > 0 && s.step == cmd.kill_after_step) std::raise(SIGKILL);  // no clean-up, as a crash
  };
  const auto result = run_pretraining(DataRoot::from_environment(),
                                      {.out = cmd.out, .recipe = cmd.settings(), .steps = cmd.steps, .minutes = cmd.minutes,
                                       .resume = cmd.resume, .show_progress = !cmd.quiet, .log = &std::cout,
                                       .after_step = after_step});
  std::printf("heldout_accuracy=%.4f heldout_loss=%.4f steps=%lld tokens_per_s=%.0f\n", result.heldout.accuracy,
              result.heldout.loss, static_cast<long long>(result.state.step),
              static_cast<double>(result.state.tokens) / std::max(1e-9, result.state.seconds));
}

std::filesystem::path resolve_model(const std::filesystem::path& folder_or_name) {
  const auto name = folder_or_name.string();
  if (!is_cached_model_name(name) || std::filesystem::is_directory(folder_or_name)) return folder_or_name;
  const auto dash = name.find('-');
  return cached_model(DataRoot::from_environment(), name.substr(0, dash), name.substr(dash + 1), {.log = &std::cerr});
}

void add_pretrain_command(CLI::App& app) {
  auto o = std::make_shared<PretrainCommand>();
  auto* cmd = app.add_subcommand("pretrain", "Pretrain a BERT (masked LM + NSP) or GPT-2 (causal LM) from scratch on the corpus\n"
                                             "  e.g. darkbert pretrain --arch bert --recipe mini --minutes 20 --out mini-bert");
  cmd->add_option("--arch", o->arch, "bert or gpt2")->check(CLI::IsMember({"bert", "gpt2"}))->capture_default_str();
  cmd->add_option("--recipe", o->recipe, "study (the default BERT and GPT-2: 48 heads each), mini (smaller: 8 and 16 heads), reference (the PyTorch reference's) or tiny (for tests)")->capture_default_str();
  cmd->add_option("--out", o->out, "Output folder (model, checkpoint/, eval.csv, head_masses.csv, run.json)")->required();
  auto* minutes = cmd->add_option("--minutes", o->minutes, "Training-time budget (the schedule decays to 0 at its end); default: the recipe's length");
  auto* steps = cmd->add_option("--steps", o->steps, "Number of training steps; default: the recipe's length");
  minutes->excludes(steps);
  cmd->add_flag("--resume", o->resume, "Continue from OUT/checkpoint with the run's saved settings");
  cmd->add_option("--layers", o->layers, "Override: transformer blocks");
  cmd->add_option("--hidden", o->hidden, "Override: hidden size");
  cmd->add_option("--heads", o->heads, "Override: attention heads");
  cmd->add_option("--ff", o->ff, "Override: FFN size");
  cmd->add_option("--seq", o->seq, "Override: sequence length");
  cmd->add_option("--batch", o->batch, "Override: sequences per step");
  cmd->add_option("--lr", o->lr, "Override: peak learning rate");
  cmd->add_option("--warmup", o->warmup, "Override: warm-up steps");
  cmd->add_option("--adam-beta2", o->adam_beta2, "Override: AdamW's second-moment decay");
  cmd->add_option("--weight-decay", o->weight_decay, "Override: AdamW's decoupled weight decay of matrices");
  cmd->add_option("--seed", o->seed, "Override: seed of the weights, data order, masks and dropout");
  cmd->add_option("--weights-seed", o->weights_seed,
                  "Override: seed of the initial weights alone (--seed keys the rest)")
      ->check(CLI::Range(std::int64_t{0}, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--data-seed", o->data_seed,
                  "Override: seed of the data order, masks and sampled-softmax draws alone (--seed keys the rest)")
      ->check(CLI::Range(std::int64_t{0}, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--max-documents", o->max_documents, "Override: train on the first N documents (0 = all)");
  cmd->add_option("--eval-every", o->eval_every, "Override: steps between held-out evaluations");
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "Override: steps between checkpoints");
  cmd->add_option("--position-init", o->position_init, "Override: normal (N(0, 0.02)) or sinusoidal position embeddings at the start")
      ->check(CLI::IsMember({"normal", "sinusoidal"}));
  cmd->add_option("--qk-init-std", o->qk_init_std, "Override: standard deviation of the initial query and key weights")
      ->check(CLI::Range(1e-6, 10.0));
  cmd->add_option("--position-rms", o->position_rms, "Override: root-mean-square of the initial position table")
      ->check(CLI::Range(1e-6, 10.0));
  cmd->add_option("--mask-prob", o->mask_prob, "Override: BERT's share of masked tokens in training (held-out stays 0.15)")
      ->check(CLI::Range(0.01, 0.9));
  cmd->add_option("--short-seq", o->short_seq, "Override: sequence length of a first, short phase (0 = none)")
      ->check(CLI::Range(8, 1 << 20));
  cmd->add_option("--short-fraction", o->short_fraction, "Override: share of the steps in the short phase")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--predicted-fraction", o->predicted_fraction,
                  "Override: GPT-2's share of training positions whose next token is predicted (held-out: all)")
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--softmax-draws", o->softmax_draws,
                  "Override: GPT-2's sampled softmax, candidate draws per step (0 = full softmax; held-out: full)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30));
  cmd->add_option("--dropout", o->dropout, "Override: embedding, attention and hidden dropout probability")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--attention-dropout", o->attention_dropout,
                  "Override: dropout on the attention probabilities alone (default: --dropout)")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--decay-fraction", o->decay_fraction,
                  "Override: the learning rate holds at --lr, then falls linearly to 0 over this last share of the steps "
                  "(1 = from the end of the warm-up on)")
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--dropout-warmup", o->dropout_warmup,
                  "Override: both dropouts ramp linearly from 0 to their values over the first N steps (0 = none)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  cmd->add_option("--grow-from", o->grow_from,
                  "Override: GPT-2 trains with this many blocks first, then grows to --layers (0 = no growth)")
      ->check(CLI::Range(0, 1 << 12));
  cmd->add_option("--grow-fraction", o->grow_fraction, "Override: share of the steps before growing")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--grow-warmup", o->grow_warmup, "Override: steps over which the learning rate warms up again after growing")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30));
  cmd->add_option("--probe-pairs", o->probe_pairs, "Override: MRPC dev pairs for the per-head attention masses");
  cmd->add_option("--heldout-examples", o->heldout_examples,
                  "Override: held-out pairs (BERT) or windows (GPT-2) per evaluation (0 = 512 / 256)");
  cmd->add_option("--batch-slices", o->batch_slices,
                  "Override: run each step's batch as N slices side by side, one per thread (other bits than 1)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--quiet", o->quiet, "No progress bar");
  cmd->add_option("--kill-after-step", o->kill_after_step, "Testing: kill this process (SIGKILL) after step N");
  cmd->callback([o] {
    run_pretrain_command(*o);
  });
}

}  // namespace darkbert::cli
