// darkbert — the command line. Each subcommand lives in its own cmd_<name>.cpp next to this file.
#include <CLI/CLI.hpp>

#include <unistd.h>  // isatty, STDOUT_FILENO

#include <cerrno>     // errno
#include <cstdio>     // std::fflush, std::ferror, stdout
#include <cstring>    // std::strerror
#include <exception>  // std::exception
#include <iostream>   // std::cerr, std::cout
#include <string>     // std::string

#include "commands.hpp"
#include "darkbert/core/allocator_policy.hpp"
#include "darkbert/core/blas_kernel.hpp"
#include "darkbert/core/kernel_dispatch.hpp"
#include "darkbert/version.hpp"

int main(int argc, char** argv) {
  darkbert::restart_with_fast_blas_kernel(argv);  // AVX-512 GEMM kernels where OpenBLAS misdetects the CPU
  darkbert::reuse_freed_memory();                 // training steps reuse their large buffers
  // Standard output to a file or pipe is fully buffered anyway; a 1 MiB buffer makes the final flush
  // below the one write that can fail, so its errno names the reason (a full disk, a closed pipe).
  static char stdout_buffer[1 << 20];
  if (!::isatty(STDOUT_FILENO)) std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
  CLI::App app{"darkbert: exact transformer forward passes, hooks and attention analysis"};
  // The kernel line tells which product code this process runs: avx512, avx2 or blas (DARKBERT_KERNEL
  // forces one).
  app.set_version_flag("--version", [] {
    return std::string("darkbert ") + darkbert::version + " (kernel: " + darkbert::kernel_path_name(darkbert::kernel_path()) +
           ", OpenBLAS core: " + darkbert::blas_core_name() + ")";
  });
  app.require_subcommand(1);
  darkbert::cli::add_run_command(app);
  darkbert::cli::add_sweep_command(app);
  darkbert::cli::add_tokenize_command(app);
  darkbert::cli::add_annotate_command(app);
  darkbert::cli::add_bench_command(app);
  darkbert::cli::add_init_command(app);
  darkbert::cli::add_finetune_command(app);
  darkbert::cli::add_finetune_table_command(app);
  darkbert::cli::add_pretrain_command(app);
  darkbert::cli::add_reproduce_command(app);
  // Set after the subcommands, which would otherwise inherit it; each has its own example.
  app.footer("Example: darkbert run --cases ../shared/golden/cases/bert_model.json --out out/bert_model --check\n"
             "Run `darkbert COMMAND --help` for each command's options and an example.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "darkbert: error: " << e.what() << "\n";
    return 1;
  }
  // Reports and JSON go to standard output too; a full disk or closed pipe there is an error, not exit 0.
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "darkbert: error: standard output: write failed"
              << (errno ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
    return 1;
  }
  return 0;
}
