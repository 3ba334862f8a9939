// darkbert reproduce --out DIR [--quick] [--model DIR] [--seeds N] [--tasks MRPC,STS-B,...] [--lr 5e-4]
//
// "Revealing the Dark Secrets of BERT" end to end (study/reproduce.hpp): Table 1 and every section on every
// available task, then the findings report (report.md, report.html, summary.json) beside the CSV, .npy and
// figure files each section wrote. A killed run resumes where it stopped.

#include <CLI/CLI.hpp>

#include <cstdio>      // std::printf
#include <filesystem>  // std::filesystem::path
#include <iostream>    // std::cerr
#include <memory>      // std::make_shared
#include <string>      // std::string
#include <vector>      // std::vector

#include "commands.hpp"
#include "darkbert/study/reproduce.hpp"

namespace darkbert::cli {

struct ReproduceCommand {
  std::filesystem::path out, model;
  std::vector<std::string> tasks;
  int seeds = 3;
  double lr = 5e-4;
  bool quick = false, quiet = false, check = false;
};

void add_reproduce_command(CLI::App& app) {
  auto o = std::make_shared<ReproduceCommand>();
  auto* cmd = app.add_subcommand("reproduce", "Reproduce 'Revealing the Dark Secrets of BERT': every section on every task, "
                                              "and the findings report");
  cmd->footer("Example: darkbert reproduce --out study            (the default model; about 45 minutes once it is cached)\n"
              "         darkbert reproduce --out quick --quick    (every step on tiny sizes, in minutes)");
  cmd->add_option("--out", o->out, "Study folder: report.md, report.html, summary.json, units/, table1/ (resumed if it exists)")->required();
  cmd->add_option("--model", o->model, "Pretrained BERT-family checkpoint folder (default: darkbert's study model, "
                                       "pretrained into the cache on first use)")->check(CLI::ExistingDirectory);
  cmd->add_option("--seeds", o->seeds, "Fine-tuning seeds per task and setting")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--tasks", o->tasks, "GLUE tasks (default: every one whose data is present)")->delimiter(',');
  cmd->add_option("--lr", o->lr, "Fine-tuning peak learning rate (BERT-base used 2e-5; small models need ~5e-4)")->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Tiny sizes (and a seconds-long model if none is given): checks every step in minutes");
  cmd->add_flag("--quiet", o->quiet, "No progress bars");
  cmd->add_flag("--check", o->check, "Then check the folder: every file parses, every figure decodes, every number of "
                                     "report.md is in summary.json (fails naming each problem)");
  cmd->callback([o] {
    study::ReproduceOptions options{.out = o->out, .model = o->model, .seeds = o->seeds, .quick = o->quick,
                                    .learning_rate = o->lr, .show_progress = !o->quiet, .log = &std::cerr};
    for (const auto& t : o->tasks) options.tasks.push_back(parse_glue_task(t));
    const auto run = study::reproduce(options);
    std::printf("study: %s\nunits: %zu computed now, %zu resumed, %.0f s\nreport: %s, %s, %s\n", run.model_description.c_str(),
                run.units.ran, run.units.resumed, run.seconds, (o->out / "report.md").string().c_str(),
                (o->out / "report.html").string().c_str(), (o->out / "summary.json").string().c_str());
    if (!o->check) return;
    const auto problems = study::check_report(o->out);
    for (const auto& p : problems) std::fprintf(stderr, "check: %s\n", p.message.c_str());
    if (!problems.empty()) fail(o->out.string(), ": the report check found ", problems.size(), " problem(s)");
    std::printf("check: every file parses, every figure decodes, every number of report.md is in summary.json\n");
  });
}

}  // namespace darkbert::cli
