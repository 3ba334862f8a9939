#pragma once
/// @file
/// A pretraining run's settings in one record (saved as the run's run.json), the named recipes, and the
/// model configuration a recipe builds.
///
/// @code
/// auto recipe = darkbert::named_recipe("mini", "bert");  // the embedded default BERT
/// recipe.lr = 5e-4;                                       // every field can be changed
/// darkbert::ModelConfig config = darkbert::recipe_config(recipe);
/// @endcode

#include <algorithm>  // std::max
#include <cstddef>    // std::size_t
#include <cstdint>    // std::int64_t, std::uint64_t
#include <string>     // std::string

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "../model/config.hpp"

namespace darkbert {

/// A recipe's settings. The defaults are the `reference` recipe.
struct PretrainRecipe {
  std::string arch = "bert";  ///< bert (masked LM + NSP) or gpt2 (causal LM)
  int layers = 4;             ///< transformer blocks
  int hidden = 256;           ///< hidden size
  int heads = 4;              ///< attention heads
  int ff = 1024;              ///< FFN size
  int seq = 128;              ///< tokens per training example (the long phase's, with a short phase)
  std::size_t batch = 32;     ///< examples per step
  double lr = 1e-3;           ///< peak learning rate (linear warm-up, then linear decay to 0)
  std::int64_t warmup = 200;  ///< warm-up steps
  double adam_beta2 = 0.999;  ///< AdamW's second-moment decay
  double weight_decay = 0.01;  ///< AdamW's decoupled decay of matrices
  double decay_fraction = 1;  ///< the learning rate falls linearly to 0 over this last share of the steps and
                              ///< holds at `lr` before (1: it falls from the end of the warm-up on)
  std::int64_t steps = 0;     ///< length of the run (0: give minutes)
  double minutes = 0;         ///< or a training-time budget (used when steps is 0)
  std::uint64_t seed = 0;     ///< weights, data order, masks and dropout (but for the two below)
  std::int64_t weights_seed = -1;  ///< the initial weights from this seed instead (negative: `seed`)
  std::int64_t data_seed = -1;     ///< the data order, masks and sampled-softmax draws from this seed
                                   ///< instead (negative: `seed`); `seed` then keys the dropout alone.
                                   ///< The two tell apart what each random choice decides in a run
  std::size_t max_documents = 0;  ///< train on the first N documents (0 = all)
  std::int64_t eval_every = 100;       ///< steps between held-out evaluations (also at 0 and at the end)
  std::int64_t checkpoint_every = 200;  ///< steps between checkpoints (also at the end)
  std::size_t probe_pairs = 200;          ///< MRPC dev pairs for the per-head attention masses
  std::size_t heldout_examples = 0;       ///< held-out segment pairs (BERT) or windows (GPT-2) scored per evaluation
                                          ///< (0: the task's 512 / 256; fewer for seconds-long test runs)
  std::string position_init = "normal";  ///< or "sinusoidal" (train/position_init.hpp)
  double position_rms = 0.02;             ///< root-mean-square of the initial position table
  double qk_init_std = 0.02;              ///< standard deviation of the initial query and key weights
                                          ///< at the start (the model's initializer_range by default; blocks
                                          ///< added by growing keep the model's draw; query_key_init.hpp)
  double dropout = 0.1;                   ///< embedding, attention and hidden dropout while pretraining
  double attention_dropout = -1;          ///< dropout on the attention probabilities alone (negative: `dropout`)
  std::int64_t dropout_warmup = 0;        ///< both ramp linearly from 0 over the first this-many steps (0: none)
  double mask_prob = 0.15;                ///< BERT: share of the tokens masked for training (held-out: 0.15)
  int short_seq = 0;                      ///< tokens per example in a first, short phase (0 = none; pretrain.hpp)
  double short_fraction = 0;              ///< share of the steps in that phase
  double predicted_fraction = 1;          ///< GPT-2: share of the training positions whose next token is predicted
  std::int64_t softmax_draws = 0;         ///< GPT-2: sampled softmax, draws per step (0 = full softmax)
  int grow_from = 0;             ///< GPT-2: blocks of a first, shallow phase; then grown to `layers` (0 = none; grow_depth.hpp)
  double grow_fraction = 0;      ///< share of the steps in that phase
  std::int64_t grow_warmup = 100;  ///< after growing, the learning rate warms up again over this many steps
  int batch_slices = 1;  ///< each step's batch in this many slices run side by side (TrainingStep; 1 = whole)

  /// Refuses settings no run can use, naming the field.
  void validate() const {
    require(arch == "bert" || arch == "gpt2", "pretraining recipe: arch is '", arch, "' (bert or gpt2)");
    require(layers > 0 && hidden > 0 && heads > 0 && ff > 0 && seq > 1 && batch > 0,
            "pretraining recipe: layers, hidden, heads, ff, seq and batch must be positive");
    require(short_seq <= seq, "pretraining recipe: the short phase's length (", short_seq,
            ") exceeds the sequence length (", seq, ")");
    require(steps > 0 || minutes > 0, "pretraining recipe: give a number of steps or minutes");
    require(batch_slices >= 1 && static_cast<std::size_t>(batch_slices) <= batch, "pretraining recipe: batch_slices (",
            batch_slices, ") must lie between 1 and the batch (", batch, ")");
    require(decay_fraction > 0 && decay_fraction <= 1, "pretraining recipe: decay_fraction (", decay_fraction,
            ") must lie in (0, 1]");
    require(adam_beta2 > 0 && adam_beta2 < 1, "pretraining recipe: adam_beta2 (", adam_beta2, ") must lie in (0, 1)");
    require(weight_decay >= 0, "pretraining recipe: weight_decay is negative");
    require(qk_init_std > 0, "pretraining recipe: qk_init_std (", qk_init_std, ") must be positive");
    require(dropout_warmup >= 0, "pretraining recipe: dropout_warmup is negative");
    require(softmax_draws >= 0, "pretraining recipe: softmax_draws is negative");
    require(softmax_draws == 0 || arch == "gpt2", "pretraining recipe: softmax_draws (sampled softmax) is for gpt2 only");
    if (grow_from > 0) {
      require(arch == "gpt2", "pretraining recipe: grow_from is for gpt2 only (a post-LN BERT block cannot start as the identity)");
      require(grow_from < layers, "pretraining recipe: grow_from (", grow_from, ") must be fewer blocks than layers (", layers, ")");
      require(grow_fraction > 0 && grow_fraction < 1, "pretraining recipe: grow_fraction (", grow_fraction,
              ") must lie strictly between 0 and 1");
      require(steps > 0, "pretraining recipe: growing needs a number of steps, not minutes");
      require(grow_warmup >= 0, "pretraining recipe: grow_warmup is negative");
    }
  }

  /// The seed of the initial weights (and of blocks added when growing).
  std::uint64_t initial_weights_seed() const { return seed_unless(weights_seed); }
  /// The seed of the data order, the masks and the sampled-softmax draws.
  std::uint64_t task_seed() const { return seed_unless(data_seed); }
  /// `override_seed` where it is set (not negative), else `seed`.
  std::uint64_t seed_unless(std::int64_t override_seed) const {
    return override_seed < 0 ? seed : static_cast<std::uint64_t>(override_seed);
  }

  /// The step at which a growing run adds its blocks (0 when it does not grow).
  std::int64_t grow_step() const {
    return grow_from > 0 ? std::max<std::int64_t>(1, static_cast<std::int64_t>(grow_fraction * static_cast<double>(steps))) : 0;
  }
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PretrainRecipe, arch, layers, hidden, heads, ff, seq, batch, lr, warmup, adam_beta2, weight_decay, decay_fraction,
                                                steps, minutes, seed, weights_seed, data_seed, max_documents, eval_every, checkpoint_every,
                                                probe_pairs, heldout_examples, position_init, position_rms, qk_init_std, dropout, attention_dropout, dropout_warmup, mask_prob, short_seq,
                                                short_fraction, predicted_fraction, softmax_draws, grow_from, grow_fraction,
                                                grow_warmup, batch_slices)

/// The named recipes:
///   mini       small models (train/default_models.hpp): width 128, 4 heads, FFN 512,
///              sinusoidal positions at 3x the usual scale. BERT: 2 blocks; the first 85% of the steps on
///              32-token examples and the rest on 128 (as BERT was pretrained, at two lengths), lr 1e-3
///              (positional heads rise once the learning rate is at or below it), batch 64, 8,700 steps,
///              about 25 minutes on two cores (40 on one); positional, block and vertical heads emerge
///              (docs/default-models.md). GPT-2: 4 blocks (with 2 its previous-token
///              head stalls at 0.41; with 4 it ends at 0.53), 128 tokens throughout (at 32-64 that head
///              stays a recent-token window), batch 16, lr 3e-3, a sampled softmax of 4,096 draws
///              (sampled_softmax.hpp; 5x the tokens/s of the full 50,257-way head), 10,000 steps, 16 to 27
///              minutes on two cores (docs/default-models.md).
///   study      the default models the reproduction analyses (train/default_models.hpp). BERT: the
///              `mini` recipe at 6 blocks x 8 heads (width 128, head size 16), so the paper's per-head
///              questions have 48 heads to ask about; about 1.9x the `mini` step (docs/default-models.md).
///              GPT-2: the `mini` recipe at 12 blocks x 4 heads (48 heads of size 32), positions at
///              rms 0.2, attention dropout 0.2, 5,500 steps (11.3 M tokens; its previous-token head ends
///              past 0.55), about 1.5x the BERT study step on one thread.
///   reference  the PyTorch reference's shape and recipe (4 x 256 x 4, FFN 1024, seq 128, batch 32, lr 1e-3,
///              warm-up 200; ../shared/notes/pretraining-reference.md), for side-by-side comparisons: 20 minutes.
///   tiny       seconds-long runs for tests (no length: give one).
inline PretrainRecipe named_recipe(const std::string& name, const std::string& arch) {
  PretrainRecipe r;
  r.arch = arch;
  if (name == "mini") {
    r.layers = 2, r.hidden = 128, r.heads = 4, r.ff = 512, r.seq = 128, r.warmup = 300;
    r.position_init = "sinusoidal", r.position_rms = 0.06;
    if (arch == "gpt2") {
      r.layers = 4;  // the extra blocks cost little beside the LM head and sharpen the previous-token head
      r.lr = 3e-3, r.batch = 16, r.steps = 10000, r.softmax_draws = 4096;
      r.eval_every = 1000, r.checkpoint_every = 1000;  // a held-out score is a full-softmax pass
    } else {
      r.short_seq = 32, r.short_fraction = 0.85;
      r.lr = 1e-3, r.batch = 64, r.steps = 8700;
      r.eval_every = 500, r.checkpoint_every = 500;
    }
  } else if (name == "study" && arch == "gpt2") {
    r = named_recipe("mini", arch);
    // 48 heads of size 32: at size 16 (6 x 8) the previous-token head stopped at 0.34 (docs/default-models.md)
    r.layers = 12, r.heads = 4;
    // At mini's settings that head read 0.46 after 10 M tokens; positions at rms 0.2 and attention dropout
    // 0.2 take it past 0.5 in 8 M and to 0.56 in 11 M (docs/default-models.md).
    r.position_rms = 0.2, r.attention_dropout = 0.2, r.steps = 5500;
  } else if (name == "study") {
    r = named_recipe("mini", arch);
    r.layers = 6, r.heads = 8;  // 48 heads: enough for per-head questions (percentiles, layer trends, ablations)
    // Dropout 0.1 grew a vertical head but stopped the positional ones at 0.38 of prev + next, 0 the other way
    // round; at 0.05, with a longer 128-token phase, both grow (docs/default-models.md).
    r.dropout = 0.05, r.short_fraction = 0.8;
  } else if (name == "tiny") {
    r.layers = 2, r.hidden = 64, r.heads = 2, r.ff = 256, r.seq = 64, r.batch = 8, r.lr = 2e-3, r.warmup = 20;
    r.eval_every = 50, r.checkpoint_every = 50, r.probe_pairs = 20;
  } else if (name == "reference") {
    r.minutes = 20;
  } else {
    fail("pretraining: unknown recipe '", name, "' (study, mini, reference or tiny)");
  }
  return r;
}

/// The model a recipe trains: its shape, the real vocabulary's size, at least 128 positions (the §3.1 probe
/// feeds whole MRPC pairs whatever the training length) and the recipe's dropout.
inline ModelConfig recipe_config(const PretrainRecipe& r) {
  ModelConfig c = r.arch == "gpt2" ? ModelConfig::gpt2_shape(r.layers, r.hidden, r.heads, r.ff, 50257, std::max(r.seq, 128))
                                   : ModelConfig::bert_shape(r.layers, r.hidden, r.heads, r.ff, 30522, std::max(r.seq, 128));
  c.architecture = r.arch == "gpt2" ? "GPT2LMHeadModel" : "BertForPreTraining";
  c.embedding_dropout = c.hidden_dropout = r.dropout;
  c.attention_dropout = r.attention_dropout < 0 ? r.dropout : r.attention_dropout;
  c.validate("pretraining recipe");
  return c;
}

}  // namespace darkbert
