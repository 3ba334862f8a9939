#pragma once
// PLACEHOLDER — replaced by the real subcommand.
#include <CLI/CLI.hpp>
namespace darkbert::cli {
inline void add_tokenize_command(CLI::App&) {}
}  // namespace darkbert::cli
