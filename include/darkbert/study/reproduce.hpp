#pragma once
/// @file
/// `darkbert reproduce`: "Revealing the Dark Secrets of BERT" end to end on one pretrained checkpoint — the
/// plan (study/study_plan.hpp), its units run or resumed (study/work_units.hpp), and the findings report
/// written from the result files (study/findings.hpp).
///
/// @code
/// auto run = darkbert::study::reproduce({.out = "study", .model = "bert-base-uncased/", .seeds = 3});
/// // study/report.md, study/report.html, study/summary.json
/// @endcode

#include <chrono>  // std::chrono::steady_clock

#include "darkbert/data/root.hpp"
#include "darkbert/study/findings.hpp"
#include "darkbert/study/study_plan.hpp"
#include "darkbert/study/work_units.hpp"

namespace darkbert::study {

/// Plans the study, runs every unit not yet done, and writes the report. Returns what was run.
inline StudyRun reproduce(const ReproduceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto root = DataRoot::from_environment();
  auto plan = plan_study(root, options);
  if (options.log)
    *options.log << "reproduce: " << plan.units.size() << " units into " << (options.out / "units").string() << "\n";
  plan.run.units = run_units(plan.units, options.out / "units", plan.run.fingerprint,
                             {.label = "study", .show_progress = options.show_progress});
  plan.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_findings(root, plan.run);
  return plan.run;
}

}  // namespace darkbert::study
