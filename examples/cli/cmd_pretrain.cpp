// darkbert pretrain --arch bert|gpt2 --out DIR [--recipe mini|reference|tiny] [--minutes M | --steps N] [--resume]
//                   [--layers --hidden --heads --ff --seq --batch --lr --warmup] [--seed N] [--max-documents N]
//                   [--eval-every N] [--checkpoint-every N] [--probe-pairs 200] [--quiet]
//
// Pretrains a model from scratch on the corpus of the data root (corpus/train.txt, one sentence per line,
// documents separated by blank lines) with the real vocabulary (vocab/bert-base-uncased, vocab/gpt2):
// BERT with masked LM + next-sentence prediction, GPT-2 with causal LM. At every evaluation it logs to
// DIR/eval.csv the held-out loss and accuracy (corpus/heldout.txt) and, on the first --probe-pairs MRPC dev
// pairs, the strongest head of each §3.1 pattern: attention on the neighbouring tokens (positional), on
// [CLS]/[SEP] (vertical), inside the own segment (block); every head's masses go to DIR/head_masses.csv.
// eval.csv is also drawn as heldout_accuracy.png and head_masses.png. DIR/checkpoint/ is replaced atomically every --checkpoint-every steps; --resume continues from it with the
// run's saved settings and ends bit-identical to an uninterrupted run. The result is a Hugging Face folder
// in DIR (config.json, model.safetensors, vocabulary). Ends with one line:
//   heldout_accuracy=... heldout_loss=... steps=... tokens_per_s=...

#include <CLI/CLI.hpp>
#include <algorithm>   // std::max, std::min
#include <cmath>       // std::ceil

#include <csignal>     // std::raise, SIGKILL

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <memory>      // std::make_shared
#include <sstream>     // std::istringstream, std::ostringstream
#include <string>      // std::string

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "darkbert/core/atomic_file.hpp"
#include "darkbert/tokenizer/detail/text_files.hpp"
#include "darkbert/analysis/head_pattern_probe.hpp"
#include "darkbert/data/glue.hpp"
#include "darkbert/data/root.hpp"
#include "darkbert/train/position_init.hpp"
#include "darkbert/train/pretrain.hpp"
#include "darkbert/train/training_checkpoint.hpp"
#include "darkbert/viz/line_chart.hpp"

namespace darkbert::cli {

// A recipe's settings; every field can be overridden by its flag. Saved in DIR/run.json.
struct PretrainRecipe {
  std::string arch = "bert";
  int layers = 4, hidden = 256, heads = 4, ff = 1024, seq = 128;
  std::size_t batch = 32;
  double lr = 1e-3;
  std::int64_t warmup = 200;
  std::uint64_t seed = 0;
  std::size_t max_documents = 0;
  std::int64_t eval_every = 100, checkpoint_every = 200;
  std::size_t probe_pairs = 200;
  std::string position_init = "normal";  // or "sinusoidal" (train/position_init.hpp)
  double position_rms = 0.02;             // root-mean-square of the initial position table
  double dropout = 0.1;                   // embedding, attention and hidden dropout while pretraining
  double mask_prob = 0.15;                // BERT: share of the tokens masked for training (held-out: 0.15)
  int short_seq = 0;                      // tokens per example in a first, short phase (0 = none; pretrain.hpp)
  double short_fraction = 0;              // share of the steps in that phase
  double predicted_fraction = 1;          // GPT-2: share of the training positions whose next token is predicted
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PretrainRecipe, arch, layers, hidden, heads, ff, seq, batch, lr, warmup, seed,
                                   max_documents, eval_every, checkpoint_every, probe_pairs, position_init,
                                   position_rms, dropout, mask_prob, short_seq, short_fraction, predicted_fraction)

// The named recipes:
//   mini       the embedded default models: 2 x 128 x 4, FFN 512, the first 85% of the steps on 32-token
//              examples and the rest on 128 (as BERT was pretrained, at two lengths), sinusoidal positions
//              at 3x the usual scale; lr 1e-3 for BERT (positional heads rise once the learning rate is
//              at or below it), 2e-3 for GPT-2. 8,700 BERT steps (--steps 8700) train in about 23 minutes
//              on this machine's two cores (40 on one); positional, block and vertical heads emerge
//              (README, "Looking for positional heads").
//   reference  the PyTorch reference's shape and recipe (4 x 256 x 4, FFN 1024, seq 128, batch 32, lr 1e-3,
//              warm-up 200; ../shared/notes/pretraining-reference.md), for side-by-side comparisons.
//   tiny       seconds-long runs for tests.
inline PretrainRecipe named_recipe(const std::string& name, const std::string& arch) {
  PretrainRecipe r;  // the defaults are the reference recipe
  r.arch = arch;
  if (name == "mini") {
    r.layers = 2, r.hidden = 128, r.heads = 4, r.ff = 512, r.seq = 128, r.warmup = 300;
    r.lr = arch == "gpt2" ? 2e-3 : 1e-3;
    r.batch = arch == "gpt2" ? 32 : 64;  // GPT-2 predicts every position: half the examples per step
    r.short_seq = 32, r.short_fraction = 0.85;
    r.position_init = "sinusoidal", r.position_rms = 0.06;
    r.eval_every = 500, r.checkpoint_every = 500;
  } else if (name == "tiny") {
    r.layers = 2, r.hidden = 64, r.heads = 2, r.ff = 256, r.seq = 64, r.batch = 8, r.lr = 2e-3, r.warmup = 20;
    r.eval_every = 50, r.checkpoint_every = 50, r.probe_pairs = 20;
  } else if (name != "reference") {
    fail("pretrain: unknown recipe '", name, "' (mini, reference or tiny)");
  }
  return r;
}

struct PretrainCommand {
  std::filesystem::path out;
  std::string recipe = "mini", arch = "bert";
  double minutes = 0;
  std::int64_t steps = 0;
  bool resume = false, quiet = false;
  std::int64_t kill_after_step = 0;  // testing crash safety: SIGKILL this process after that step
  // Overrides (unset = the recipe's value).
  std::optional<int> layers, hidden, heads, ff, seq, short_seq;
  std::optional<std::size_t> batch, max_documents, probe_pairs;
  std::optional<double> lr;
  std::optional<std::int64_t> warmup, eval_every, checkpoint_every;
  std::optional<std::uint64_t> seed;
  std::optional<std::string> position_init;
  std::optional<double> dropout, position_rms, mask_prob, short_fraction, predicted_fraction;

  PretrainRecipe settings() const {
    PretrainRecipe r = named_recipe(recipe, arch);
    auto set = [](auto& field, const auto& value) {
      if (value) field = *value;
    };
    set(r.layers, layers), set(r.hidden, hidden), set(r.heads, heads), set(r.ff, ff), set(r.seq, seq);
    set(r.batch, batch), set(r.lr, lr), set(r.warmup, warmup), set(r.seed, seed);
    set(r.max_documents, max_documents), set(r.eval_every, eval_every), set(r.checkpoint_every, checkpoint_every);
    set(r.probe_pairs, probe_pairs), set(r.position_init, position_init), set(r.dropout, dropout);
    set(r.position_rms, position_rms), set(r.mask_prob, mask_prob);
    set(r.short_seq, short_seq), set(r.short_fraction, short_fraction), set(r.predicted_fraction, predicted_fraction);
    if (r.short_seq > r.seq) fail("pretrain: the short phase's length (", r.short_seq, ") exceeds the sequence length (", r.seq, ")");
    return r;
  }
};

inline ModelConfig recipe_config(const PretrainRecipe& r) {
  ModelConfig c = r.arch == "gpt2" ? ModelConfig::gpt2_shape(r.layers, r.hidden, r.heads, r.ff, 50257, std::max(r.seq, 128))
                                   : ModelConfig::bert_shape(r.layers, r.hidden, r.heads, r.ff, 30522, std::max(r.seq, 128));
  c.architecture = r.arch == "gpt2" ? "GPT2LMHeadModel" : "BertForPreTraining";
  c.embedding_dropout = c.attention_dropout = c.hidden_dropout = r.dropout;
  c.validate("pretrain recipe");
  return c;
}

// Keeps the header and the rows of a CSV log whose first field (the step) is at most `step`: rows logged
// after the checkpoint a resumed run starts from are logged again by it.
inline void trim_log(const std::filesystem::path& path, std::int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  for (bool header = true; std::getline(in, line); header = false)
    if (header || std::stoll(line.substr(0, line.find(','))) <= step) kept += line + "\n";
  in.close();
  write_file_atomically(path, kept);
}

// The curves of eval.csv as figures: held-out accuracy, and the strongest head of each §3.1 pattern.
inline void plot_eval_log(const std::filesystem::path& out, const std::string& model_name) {
  std::ifstream in(out / "eval.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<double> step, accuracy, loss, neighbour, special, segment;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    if (f.size() < 13) continue;
    step.push_back(std::stod(f[0]));
    loss.push_back(std::stod(f[4]));
    accuracy.push_back(std::stod(f[5]));
    neighbour.push_back(std::stod(f[7]));
    special.push_back(std::stod(f[9]));
    segment.push_back(std::stod(f[11]));
  }
  write_line_chart(out / "heldout_accuracy.png", {{"held-out token accuracy", step, accuracy}},
                   {.title = model_name + ": held-out accuracy", .x_label = "training step", .y_label = "accuracy", .y_min = 0.0});
  write_line_chart(out / "head_masses.png",
                   {{"previous + next token (positional)", step, neighbour}, {"[CLS] + [SEP] (vertical)", step, special},
                    {"own segment (block)", step, segment}},
                   {.title = model_name + ": strongest head of each pattern (MRPC dev)", .x_label = "training step",
                    .y_label = "attention mass", .y_min = 0.0, .y_max = 1.0});
}

inline void run_pretrain_command(const PretrainCommand& cmd) {
  namespace fs = std::filesystem;
  const auto root = DataRoot::from_environment();
  const fs::path checkpoint_dir = cmd.out / "checkpoint";
  PretrainRecipe r = cmd.settings();
  PretrainState state;
  std::optional<Transformer<float>> loaded;
  nlohmann::json saved_state;
  if (cmd.resume && find_training_checkpoint(checkpoint_dir)) {
    r = read_json_file(cmd.out / "run.json").get<PretrainRecipe>();  // the run's own settings win
    auto [model, json] = load_training_checkpoint<float>(checkpoint_dir);
    loaded.emplace(std::move(model));
    state = PretrainState::from_json(json, (checkpoint_dir / "state.json").string());
    std::printf("resuming %s at step %lld (epoch %lld, example %lld)\n", cmd.out.string().c_str(),
                static_cast<long long>(state.step), static_cast<long long>(state.epoch),
                static_cast<long long>(state.offset));
  } else if (cmd.resume) {
    std::printf("no checkpoint in %s yet: starting from scratch\n", cmd.out.string().c_str());
  }
  const bool gpt2 = r.arch == "gpt2";
  const fs::path vocab_dir = root.find(gpt2 ? "vocab/gpt2" : "vocab/bert-base-uncased", "vocabulary", "see ../shared/data");
  const auto tokenizer = Tokenizer::from_directory(vocab_dir);
  const CorpusOptions corpus_options{.max_documents = r.max_documents, .show_progress = !cmd.quiet};
  const auto train = tokenize_corpus(root.find("corpus/train.txt", "pretraining corpus", "see ../shared/data"), tokenizer, corpus_options);
  const auto heldout = tokenize_corpus(root.find("corpus/heldout.txt", "held-out corpus", "see ../shared/data"), tokenizer,
                                       {.show_progress = !cmd.quiet});
  PretrainingTask task(gpt2 ? Family::gpt2 : Family::bert, train, heldout, tokenizer,
                       {.max_length = r.seq,
                        .masking = {.mask_prob = r.mask_prob,  // Google's cap of 20 at 15% of 128, scaled up with the rate
                                    .max_predictions = std::max(20, static_cast<int>(std::ceil(r.seq * r.mask_prob)))},
                        .predicted_fraction = r.predicted_fraction},
                       r.seed);

  const ModelConfig config = recipe_config(r);
  // The §3.1 probe: MRPC dev pairs, as the paper's analysis feeds them, whole (up to the model's 128 or
  // more positions) whatever the training length, so that every run is measured on the same inputs.
  auto mrpc = load_glue(root, GlueTask::mrpc, "dev");
  std::vector<Encoding> probe_inputs;
  for (std::size_t i = 0; i < std::min(r.probe_pairs, mrpc.examples.size()); ++i)
    probe_inputs.push_back(tokenizer.encode_pair(mrpc.examples[i].text_a, mrpc.examples[i].text_b,
                                                 {.max_length = static_cast<std::size_t>(config.max_sequence_length())}));
  const HeadPatternProbe probe(std::move(probe_inputs));

  auto model = loaded ? std::move(*loaded) : Transformer<float>::random(config, TaskHeads::for_architecture(config), r.seed);
  if (!loaded) init_positions(model.params().embeddings.position, r.position_init, r.position_rms, Transformer<float>::random_init_std);
  AdamW<float> optimizer(model, {.weight_decay = 0.01});
  if (loaded) restore_optimizer(checkpoint_dir, optimizer);
  fs::create_directories(cmd.out);
  if (!loaded) write_file_atomically(cmd.out / "run.json", nlohmann::json(r).dump(2) + "\n");
  const auto eval_csv = cmd.out / "eval.csv", heads_csv = cmd.out / "head_masses.csv";
  if (loaded) {
    trim_log(eval_csv, state.step);
    trim_log(heads_csv, state.step);
  } else {
    write_file_atomically(eval_csv, "step,tokens,train_seconds,train_loss,heldout_loss,heldout_accuracy,nsp_accuracy,"
                                    "max_neighbour,neighbour_head,max_special,special_head,max_segment,segment_head\n");
    write_file_atomically(heads_csv, "step,layer,head,neighbour_share,special_share,segment_share\n");
  }
  std::printf("pretraining %s: %d layers x %d hidden x %d heads, FFN %d, %lld parameters; seq %d, batch %zu, lr %g, "
              "warm-up %lld, %s positions (rms %g), dropout %g, mask %g, short phase %d tokens for %g of the steps, "
              "predicting %g of the positions; corpus %zu documents, %zu tokens\n",
              gpt2 ? "GPT-2" : "BERT", r.layers, r.hidden, r.heads, r.ff,
              static_cast<long long>(optimizer.first_moments().size()), r.seq, r.batch, r.lr,
              static_cast<long long>(r.warmup), r.position_init.c_str(), r.position_rms, r.dropout, r.mask_prob,
              r.short_seq, r.short_fraction, gpt2 ? r.predicted_fraction : r.mask_prob, train.documents(), train.tokens.size());

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
    append_log(eval_csv, row.str(), "training log");
    for (Index l = 0; l < summary.neighbour_share.rows(); ++l)
      for (Index h = 0; h < summary.neighbour_share.cols(); ++h)
        heads << s.step << ',' << l << ',' << h << ',' << summary.neighbour_share(l, h) << ','
              << summary.special_share(l, h) << ',' << summary.segment_share(l, h) << '\n';
    append_log(heads_csv, heads.str(), "training log");
    plot_eval_log(cmd.out, gpt2 ? "GPT-2" : "BERT");
    std::fprintf(stderr, "\n[step %lld] heldout loss %.4f accuracy %.4f%s | strongest heads: neighbour %.3f (%s) "
                 "[CLS]/[SEP] %.3f (%s) own segment %.3f (%s)\n",
                 static_cast<long long>(s.step), last.loss, last.accuracy,
                 last.next_sentence_accuracy >= 0 ? (" nsp " + std::to_string(last.next_sentence_accuracy)).c_str() : "",
                 nb.value, where(nb).c_str(), sp.value, where(sp).c_str(), sg.value, where(sg).c_str());
  };
  auto checkpoint = [&](const PretrainState& s) { save_training_checkpoint(checkpoint_dir, model, optimizer, s.to_json()); };
  const PretrainOptions options{.batch_size = r.batch, .learning_rate = r.lr, .warmup_steps = r.warmup,
                                .steps = cmd.steps, .minutes = cmd.minutes, .seed = r.seed,
                                .eval_every = r.eval_every, .checkpoint_every = r.checkpoint_every,
                                .show_progress = !cmd.quiet, .short_length = r.short_seq,
                                .short_fraction = r.short_fraction};
  auto after_step = [&](const PretrainState& s) {
    if (cmd.kill_after_step > 0 && s.step == cmd.kill_after_step) std::raise(SIGKILL);  // no clean-up, as a crash
  };
  state = pretrain(model, optimizer, task, options, state,
                   {.evaluate = evaluate, .checkpoint = checkpoint, .after_step = after_step});

  model.save(cmd.out);
  copy_tokenizer_files(vocab_dir, cmd.out);
  std::printf("heldout_accuracy=%.4f heldout_loss=%.4f steps=%lld tokens_per_s=%.0f\n", last.accuracy, last.loss,
              static_cast<long long>(state.step), static_cast<double>(state.tokens) / std::max(1e-9, state.seconds));
}

void add_pretrain_command(CLI::App& app) {
  auto o = std::make_shared<PretrainCommand>();
  auto* cmd = app.add_subcommand("pretrain", "Pretrain a BERT (masked LM + NSP) or GPT-2 (causal LM) from scratch on the corpus\n"
                                             "  e.g. darkbert pretrain --arch bert --recipe mini --minutes 20 --out mini-bert");
  cmd->add_option("--arch", o->arch, "bert or gpt2")->check(CLI::IsMember({"bert", "gpt2"}))->capture_default_str();
  cmd->add_option("--recipe", o->recipe, "mini (the embedded default models), reference (the PyTorch reference's) or tiny (for tests)")->capture_default_str();
  cmd->add_option("--out", o->out, "Output folder (model, checkpoint/, eval.csv, head_masses.csv, run.json)")->required();
  auto* minutes = cmd->add_option("--minutes", o->minutes, "Training-time budget (the schedule decays to 0 at its end)");
  auto* steps = cmd->add_option("--steps", o->steps, "Number of training steps");
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
  cmd->add_option("--seed", o->seed, "Override: seed of the weights, data order, masks and dropout");
  cmd->add_option("--max-documents", o->max_documents, "Override: train on the first N documents (0 = all)");
  cmd->add_option("--eval-every", o->eval_every, "Override: steps between held-out evaluations");
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "Override: steps between checkpoints");
  cmd->add_option("--position-init", o->position_init, "Override: normal (N(0, 0.02)) or sinusoidal position embeddings at the start")
      ->check(CLI::IsMember({"normal", "sinusoidal"}));
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
  cmd->add_option("--dropout", o->dropout, "Override: embedding, attention and hidden dropout probability")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--probe-pairs", o->probe_pairs, "Override: MRPC dev pairs for the per-head attention masses");
  cmd->add_flag("--quiet", o->quiet, "No progress bar");
  cmd->add_option("--kill-after-step", o->kill_after_step, "Testing: kill this process (SIGKILL) after step N");
  cmd->callback([o] {
    if (o->minutes <= 0 && o->steps <= 0) fail("pretrain: give --minutes M or --steps N");
    run_pretrain_command(*o);
  });
}

}  // namespace darkbert::cli
