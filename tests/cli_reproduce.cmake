# `darkbert reproduce --quick --check`: the whole study on tiny sizes (seconds-long BERT and GPT-2 models,
# every available task, two fine-tuning seeds), then each folder's own check (every file parses, every figure decodes, every
# number of report.md is in summary.json), both architectures' units in one pool of two workers (whatever the
# machine: cli_reproduce_shards compares the BERT study with shards run by one worker of one thread). A second
# run must find every unit done and compute nothing.
# tests/CMakeLists.txt opens the report in headless Chromium afterwards (report_html_reproduce).
if(SANITIZED)
  # Every header the study runs is tested under the sanitizers one by one (tests/test_study_*.cpp); the
  # end-to-end run, minutes at -O2, is the release suite's.
  message(STATUS "reproduce --quick runs in the release suite, not under the sanitizers")
  return()
endif()
file(REMOVE_RECURSE "${OUT}")
set(study "${OUT}/study")
set(tasks "")
string(TIMESTAMP started "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${OUT}/cache"
                "${CLI}" reproduce --quick --quiet --seeds 2 ${tasks} --workers 2 --out "${study}" --check
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message(STATUS "${log}reproduce --quick: ${seconds} s")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "darkbert reproduce --quick failed (exit ${rc}):\n${log}\n${err}")
endif()
if(NOT log MATCHES "check: every file parses")
  message(FATAL_ERROR "reproduce --check did not report:\n${log}")
endif()
foreach(f report.md report.html summary.json table1/runs.csv results/table1/table.md results/figure2_rules.png
          results/figure2_cnn.svg results/framenet/framenet_heads.png units/study.json
          gpt2/report.md gpt2/report.html gpt2/summary.json gpt2/results/figure2_replication_rules.png
          gpt2/results/relations/last_token_categories.png)
  if(NOT EXISTS "${study}/${f}")
    message(FATAL_ERROR "reproduce --quick did not write ${f}")
  endif()
endforeach()
function(require_phrases file)  # require_phrases(FILE phrases...): each phrase occurs in FILE
  file(READ "${file}" text)
  foreach(phrase ${ARGN})
    string(FIND "${text}" "${phrase}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${file} does not say ${phrase}")
    endif()
  endforeach()
endfunction()
file(READ "${study}/report.md" report)
require_phrases("${study}/report.md" "Table 1" "§3.1" "§3.2" "§3.3" "§3.4" "§3.5" "§3.6")
if(NOT report MATCHES "QQP is absent" OR NOT report MATCHES "MNLI is absent")
  message(FATAL_ERROR "report.md does not name the absent tasks QQP and MNLI")
endif()
# Both architectures by default: GPT-2's study in gpt2/, checked too, and set beside BERT's.
if(NOT log MATCHES "report: [^\n]*gpt2/report.md" OR NOT report MATCHES "## BERT and GPT-2 side by side")
  message(FATAL_ERROR "reproduce --quick did not run and report the GPT-2 study beside BERT's:\n${log}")
endif()
require_phrases("${study}/gpt2/report.md" "on GPT-2" "BOS" "The GPT-2 replication's own classes" "§3.6"
                "all layers but the first two" "Where the two sentences meet" "separator stripe")
# The replication's boundary claim has both halves on one row of the side-by-side table.
if(NOT report MATCHES "Where the two sentences meet[^\n]*BERT: a head[^\n]*GPT-2: a head")
  message(FATAL_ERROR "the side-by-side table does not give BERT's and GPT-2's separator stripes on one row")
endif()
# Resumed: nothing left to compute, the same numbers.
file(READ "${study}/summary.json" first_summary)
execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${OUT}/cache"
                "${CLI}" reproduce --quick --quiet --seeds 2 ${tasks} --out "${study}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT log MATCHES "units: 0 computed now" OR log MATCHES "units: [1-9][0-9]* computed now")
  message(FATAL_ERROR "a second reproduce into the same folder did not resume (exit ${rc}):\n${log}\n${err}")
endif()
file(READ "${study}/summary.json" second_summary)
string(JSON first_numbers GET "${first_summary}" numbers)
string(JSON second_numbers GET "${second_summary}" numbers)
string(REGEX REPLACE "\"(unit_seconds|units_ran|units_resumed)\" *: *[0-9.e+-]+" "" first_numbers "${first_numbers}")
string(REGEX REPLACE "\"(unit_seconds|units_ran|units_resumed)\" *: *[0-9.e+-]+" "" second_numbers "${second_numbers}")
if(NOT first_numbers STREQUAL second_numbers)
  message(FATAL_ERROR "the resumed report states other numbers than the first")
endif()
# Another setting into the same folder is refused by name.
execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${OUT}/cache"
                "${CLI}" reproduce --quick --quiet --seeds 3 ${tasks} --out "${study}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "other settings \\(seeds\\)")
  message(FATAL_ERROR "reproduce with other seeds into the same folder was not refused:\n${log}\n${err}")
endif()
# --arch: each architecture once; a given model, a shard, a merge or a plan is one study.
foreach(args "--arch;bert,bert" "--arch;bert,gpt2,bert" "--arch;bert,gpt2;--plan")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${OUT}/cache"
                  "${CLI}" reproduce --quick --quiet ${args} --out "${OUT}/refused"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "--arch|take one --arch")
    message(FATAL_ERROR "reproduce ${args} was not refused by name:\n${log}\n${err}")
  endif()
endforeach()
