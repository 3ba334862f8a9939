// darkbert init --config FILE --out DIR [--tokenizer DIR] [--seed N] [--std S]
//
// Writes a randomly initialised checkpoint (config.json + model.safetensors, Hugging Face layout) for a
// config.json; the architecture named there ("BertForSequenceClassification", ...) decides the heads.
// With --tokenizer, the vocabulary files are copied beside it so the folder is self-contained.
// The starting point for pretraining from scratch, and a model of any shape for tests and benchmarks.

#include <CLI/CLI.hpp>

#include <filesystem>  // std::filesystem
#include <iostream>    // std::cout

#include "commands.hpp"
#include "darkbert/model/transformer.hpp"

namespace darkbert::cli {

void add_init_command(CLI::App& app) {
  struct Options {
    std::filesystem::path config, out, tokenizer;
    std::uint64_t seed = 0;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("init", "Write a randomly initialised checkpoint for a config.json");
  cmd->footer("Example: darkbert init --config bert-tiny/config.json --out bert-tiny-random --tokenizer bert-tiny");
  cmd->add_option("--config", o->config, "Hugging Face config.json (model_type, sizes, architectures)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Output checkpoint folder")->required();
  cmd->add_option("--tokenizer", o->tokenizer, "Folder with vocab.txt or vocab.json + merges.txt to copy")->check(CLI::ExistingDirectory);
  cmd->add_option("--seed", o->seed, "Seed of the N(0, 0.02) initialisation")->capture_default_str();
  cmd->callback([o] {
    const auto config = ModelConfig::from_json_file(o->config);
    const auto model = Transformer<float>::random(config, TaskHeads::for_architecture(config), o->seed);
    model.save(o->out);
    if (!o->tokenizer.empty()) {
      const int copied = copy_tokenizer_files(o->tokenizer, o->out);
      if (copied == 0) fail(o->tokenizer.string(), ": no vocab.txt or vocab.json + merges.txt to copy");
    }
    std::cout << "wrote " << o->out.string() << " (" << family_name(config.family) << ", " << config.num_layers
              << " layers, hidden " << config.hidden_size << ", seed " << o->seed << ")\n";
  });
}

}  // namespace darkbert::cli
