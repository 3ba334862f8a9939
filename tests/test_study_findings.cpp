// Tests for study/findings.hpp's helpers (the whole report is checked end to end by cli_reproduce.cmake:
// every number of report.md in summary.json, every figure decoded).
#include <doctest/doctest.h>

#include "darkbert/study/findings.hpp"

namespace study = darkbert::study;

TEST_CASE("findings: a verdict over tasks, and a missing task's error stated in brief") {
  CHECK(study::detail::verdict_over_tasks(5, 5) == study::Verdict::reproduced);
  CHECK(study::detail::verdict_over_tasks(2, 5) == study::Verdict::partly);
  CHECK(study::detail::verdict_over_tasks(0, 5) == study::Verdict::not_reproduced);
  CHECK(study::detail::verdict_over_tasks(0, 0) == study::Verdict::not_testable);

  const std::string reason =
      "darkbert data: GLUE QQP dev not found (glue/QQP/dev.tsv). Looked in:\n  1. $DARKBERT_DATA: /a -- no "
      "glue/QQP/dev.tsv there\n  2. beside the checkout: /b -- folder does not exist\nHow to get it: set "
      "$DARKBERT_DATA to a folder with glue/<TASK>/; QQP: https://example.org/QQP.zip";
  CHECK(study::detail::absence_in_brief(reason) ==
        "`darkbert data: GLUE QQP dev not found (glue/QQP/dev.tsv).` How to get it: `set $DARKBERT_DATA to a "
        "folder with glue/<TASK>/; QQP: https://example.org/QQP.zip`");
  CHECK(study::detail::absence_in_brief("no `file` here") == "`no  file  here`");
}
