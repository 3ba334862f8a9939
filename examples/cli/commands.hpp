#pragma once
// The subcommands of the `darkbert` binary; each is defined in its own cmd_<name>.cpp.
#include <CLI/CLI.hpp>

namespace darkbert::cli {
void add_run_command(CLI::App& app);       // run a golden-format cases file
void add_sweep_command(CLI::App& app);     // head/layer ablation sweep on a GLUE task
void add_tokenize_command(CLI::App& app);  // tokenize JSON lines
void add_annotate_command(CLI::App& app);  // POS + subject/object annotation of CoNLL-U
void add_bench_command(CLI::App& app);     // forward-pass benchmark
void add_init_command(CLI::App& app);      // randomly initialised checkpoint
void add_finetune_command(CLI::App& app);  // fine-tune on a GLUE task
void add_pretrain_command(CLI::App& app);  // pretrain from scratch on the corpus
}  // namespace darkbert::cli
