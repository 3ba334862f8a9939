#pragma once
// The subcommands of the `darkbert` binary; each is defined in its own cmd_<name>.cpp.
#include <CLI/CLI.hpp>

#include <algorithm>    // std::find
#include <array>        // std::array
#include <filesystem>   // std::filesystem
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "darkbert/tokenizer/tokenizer_files.hpp"  // copy_tokenizer_files, for the commands that save models

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
void add_reproduce_command(CLI::App& app);  // the whole study and its findings report

// --model takes a checkpoint folder or the name of an embedded model: `study-bert` and `study-gpt2` (the
// defaults), `mini-bert` or `mini-gpt2` (train/default_models.hpp: pretrained into the cache on first use) and
// read from there after. The names are listed once, for the option's help, check and error. resolve_model
// turns the option's value into a folder; it is defined in cmd_pretrain.cpp.
inline constexpr std::array<std::string_view, 4> cached_model_names = {"study-bert", "study-gpt2", "mini-bert", "mini-gpt2"};
inline std::string joined_cached_model_names(std::string_view separator) {
  std::string out;
  for (auto name : cached_model_names) out += (out.empty() ? "" : std::string(separator)) + std::string(name);
  return out;
}
inline bool is_cached_model_name(const std::string& name) {
  return std::find(cached_model_names.begin(), cached_model_names.end(), name) != cached_model_names.end();
}
std::filesystem::path resolve_model(const std::filesystem::path& folder_or_name);
inline void add_model_option(CLI::App* cmd, std::filesystem::path& model) {
  model = "study-bert";
  cmd->add_option("--model", model, "Checkpoint folder (its encoder; a classifier head is added), or " + joined_cached_model_names(" / ") +
                                        ": the embedded models, pretrained on first use")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (is_cached_model_name(value) || std::filesystem::is_directory(value)) return {};
            return "not a checkpoint folder nor " + joined_cached_model_names(" / ") + ": " + value;
          },
          "DIR|" + joined_cached_model_names("|")))
      ->capture_default_str();
}

}  // namespace darkbert::cli
