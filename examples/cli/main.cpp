// darkbert — the command line. Each subcommand lives in its own cmd_<name>.cpp next to this file.
#include <CLI/CLI.hpp>

#include <exception>  // std::exception
#include <iostream>   // std::cerr

#include "commands.hpp"
#include "darkbert/core/allocator_policy.hpp"
#include "darkbert/core/blas_kernel.hpp"


int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);  // AVX-512 GEMM kernels where OpenBLAS misdetects the CPU
  darkbert::reuse_freed_memory();                 // training steps reuse their large buffers
  CLI::App app{"darkbert: exact transformer forward passes, hooks and attention analysis"};
  app.require_subcommand(1);
  darkbert::cli::add_run_command(app);
  darkbert::cli::add_sweep_command(app);
  darkbert::cli::add_tokenize_command(app);
  darkbert::cli::add_annotate_command(app);
  darkbert::cli::add_bench_command(app);
  darkbert::cli::add_init_command(app);
  darkbert::cli::add_finetune_command(app);
  darkbert::cli::add_pretrain_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "darkbert: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
