#pragma once
// The subcommands of the `darkbert` binary; each is defined in its own cmd_<name>.cpp.
#include <CLI/CLI.hpp>

#include <filesystem>  // std::filesystem

#include "darkbert/core/atomic_file.hpp"
#include "darkbert/tokenizer/detail/text_files.hpp"

namespace darkbert::cli {
void add_run_command(CLI::App& app);       // run a golden-format cases file
void add_sweep_command(CLI::App& app);     // head/layer ablation sweep on a GLUE task
void add_tokenize_command(CLI::App& app);  // tokenize JSON lines
void add_annotate_command(CLI::App& app);  // POS + subject/object annotation of CoNLL-U
void add_bench_command(CLI::App& app);     // forward-pass benchmark
void add_init_command(CLI::App& app);      // randomly initialised checkpoint
void add_finetune_command(CLI::App& app);  // fine-tune on a GLUE task
void add_finetune_table_command(CLI::App& app);  // the paper's Table 1: tasks x settings x seeds
void add_pretrain_command(CLI::App& app);  // pretrain from scratch on the corpus

// Copies the tokenizer files found in `from` (WordPiece vocab.txt, GPT-2 vocab.json + merges.txt, and the
// Hugging Face tokenizer configs) into the checkpoint folder `to`, so that it loads as a whole; returns
// how many were copied. Copying a folder onto itself copies nothing.
inline int copy_tokenizer_files(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (std::filesystem::exists(to) && std::filesystem::equivalent(from, to)) return 0;
  int copied = 0;
  for (const char* name : {"vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"})
    if (std::filesystem::exists(from / name)) {
      // Through the crash-safe writer: a full disk is reported by name and no torn copy is left.
      write_file_atomically(to / name, detail::read_text_file(from / name, "tokenizer file"));
      ++copied;
    }
  return copied;
}

// Appends rows to a CSV log by rewriting it through the crash-safe writer: a kill leaves the log as it
// was before or after the append, never with a torn last row for a reader to misread. `what` names the
// log in errors.
inline void append_log(const std::filesystem::path& path, const std::string& rows, const char* what) {
  write_file_atomically(path, detail::read_text_file(path, what) + rows);
}

}  // namespace darkbert::cli
