# `darkbert reproduce --shard K/N` and `--merge`: the --quick study of cli_reproduce (its folder and cache,
# the fixture study_quick) run again as 2 and 3 shards, merged in several orders, must give cli_reproduce's
# folder file for file. Only these fields may differ (wall time, or what one invocation computed):
#   units/**/unit.json                          "seconds"
#   units/disable/*/seed-*/disable_heads.json   "prefix_cached_seconds"
#   table1/runs.csv                             the seconds column
#   table1/checkpoints/*/seed-*/metrics.json    "seconds", "examples_per_second"
#   report.md, report.html                      the "Compute:" line (unit seconds, units ran and resumed)
#   summary.json                                numbers.run.unit_seconds, run.units_ran, run.units_resumed
# Missing, duplicated and foreign shards are refused by name; --plan prints the shards and a prediction.
if(SANITIZED)
  message(STATUS "the sharded --quick study runs in the release suite, not under the sanitizers")
  return()
endif()
get_filename_component(both "${OUT}/../cli_reproduce/study" ABSOLUTE)
get_filename_component(cache "${OUT}/../cli_reproduce/cache" ABSOLUTE)
if(NOT EXISTS "${both}/report.md")
  message(FATAL_ERROR "${both}/report.md is missing: cli_reproduce (fixture study_quick) must run first")
endif()
file(REMOVE_RECURSE "${OUT}")
set(options --quick --quiet --seeds 2)
# One thread per shard, as one rank of a job array would run on one core: the single run had two workers
# (each on its share of the threads), and the results must not depend on either.
set(env ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${cache}" OMP_NUM_THREADS=1)
# Shards run one architecture: the single run to compare with is cli_reproduce's BERT study without its
# GPT-2 companion, i.e. its folder without gpt2/, resumed with --arch bert (nothing computed, the report
# rewritten without the side-by-side section).
set(single "${OUT}/single")
file(COPY "${both}/" DESTINATION "${single}" PATTERN "gpt2" EXCLUDE)
execute_process(COMMAND ${env} "${CLI}" reproduce ${options} --arch bert --out "${single}" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT log MATCHES "units: 0 computed now")
  message(FATAL_ERROR "the BERT study of cli_reproduce, resumed alone, computed or failed (exit ${rc}):\n${log}\n${err}")
endif()

function(reproduce expect_ok)  # reproduce(TRUE|FALSE args...): sets rc, log, err in the caller
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${env} "${CLI}" reproduce ${options} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR s "${t1} - ${t0}")
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "darkbert reproduce ${ARGN} failed (exit ${rc}):\n${log}\n${err}")
  endif()
  if(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "darkbert reproduce ${ARGN} was not refused:\n${log}")
  endif()
  message(STATUS "reproduce ${ARGN}: ${s} s")
  set(rc "${rc}" PARENT_SCOPE)
  set(log "${log}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# The text of a file with the listed wall-time fields blanked.
function(normalised file out_var)
  file(READ "${file}" text)
  get_filename_component(name "${file}" NAME)
  if(name STREQUAL "unit.json" OR name STREQUAL "metrics.json" OR name STREQUAL "disable_heads.json")
    string(REGEX REPLACE "\"(seconds|examples_per_second|prefix_cached_seconds)\": [0-9.e+-]+" "\"\\1\": _" text "${text}")
  elseif(name STREQUAL "runs.csv")
    string(REGEX REPLACE ",[0-9.]+\n" ",_\n" text "${text}")
  elseif(name STREQUAL "report.md" OR name STREQUAL "report.html")
    string(REGEX REPLACE "Compute: [^\n]*" "Compute: _" text "${text}")
  elseif(name STREQUAL "summary.json")
    string(REGEX REPLACE "\"(unit_seconds|units_ran|units_resumed)\": [0-9.e+-]+" "\"\\1\": _" text "${text}")
  endif()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

function(expect_same_as_single merged)
  file(GLOB_RECURSE want RELATIVE "${single}" "${single}/*")
  file(GLOB_RECURSE got RELATIVE "${merged}" "${merged}/*")
  list(SORT want)
  list(SORT got)
  if(NOT want STREQUAL got)
    set(only_single ${want})
    list(REMOVE_ITEM only_single ${got})
    set(only_merged ${got})
    list(REMOVE_ITEM only_merged ${want})
    message(FATAL_ERROR "${merged} holds other files than ${single}:\n only in the single run: ${only_single}\n only merged: ${only_merged}")
  endif()
  set(differ "")
  foreach(f ${want})
    get_filename_component(name "${f}" NAME)
    if(name MATCHES "^(unit|metrics|disable_heads|summary)\\.json$|^runs\\.csv$|^report\\.(md|html)$")
      normalised("${single}/${f}" a)  # text files with wall-time fields
      normalised("${merged}/${f}" b)
    else()
      file(SHA256 "${single}/${f}" a)  # every other file byte for byte (file(READ) stops at a NUL)
      file(SHA256 "${merged}/${f}" b)
    endif()
    if(NOT a STREQUAL b)
      list(APPEND differ "${f}")
    endif()
  endforeach()
  if(differ)
    message(FATAL_ERROR "${merged} differs from the single run ${single} in: ${differ}")
  endif()
  list(LENGTH want n)
  message(STATUS "${merged}: the same ${n} files as the single run")
endfunction()

# The shards, each run once; the shards of one split side by side, one thread each, as a job array's tasks
# run (bash starts them and waits for each; each one's output goes to its own log beside its folder).
set(side_by_side [=[
pids=""
for k in $(seq 1 "$N"); do
  "$@" --shard "$k/$N" --out "$DIR/shard-$k" > "$DIR/shard-$k.log" 2>&1 &
  pids="$pids $!"
done
rc=0
for p in $pids; do wait "$p" || rc=1; done
exit "$rc"
]=])
foreach(n 2 3)
  file(MAKE_DIRECTORY "${OUT}/n${n}")
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env N=${n} "DIR=${OUT}/n${n}" bash -c "${side_by_side}" bash
                          ${env} "${CLI}" reproduce ${options} RESULT_VARIABLE rc)
  string(TIMESTAMP t1 "%s")
  math(EXPR s "${t1} - ${t0}")
  message(STATUS "reproduce --shard K/${n}, K = 1..${n} side by side: ${s} s")
  if(NOT rc EQUAL 0)  # any shard failed: every shard's output, as the failing one is not known here
    set(logs "")
    foreach(k RANGE 1 ${n})
      file(READ "${OUT}/n${n}/shard-${k}.log" log)
      string(APPEND logs "--- shard ${k}/${n}:\n${log}\n")
    endforeach()
    message(FATAL_ERROR "darkbert reproduce --shard K/${n} failed (exit ${rc}):\n${logs}")
  endif()
  foreach(k RANGE 1 ${n})
    file(READ "${OUT}/n${n}/shard-${k}.log" log)
    if(NOT log MATCHES "shard ${k}/${n}: [0-9]+ computed now" OR NOT EXISTS "${OUT}/n${n}/shard-${k}/shard.json")
      message(FATAL_ERROR "shard ${k}/${n} did not say what it ran or wrote no shard.json:\n${log}")
    endif()
    if(EXISTS "${OUT}/n${n}/shard-${k}/report.md")
      message(FATAL_ERROR "shard ${k}/${n} wrote a report")
    endif()
  endforeach()
endforeach()

# Merged in several orders: the single run's files.
reproduce(TRUE --merge "${OUT}/n2/shard-2" "${OUT}/n2/shard-1" --out "${OUT}/merged-2" --check)
if(NOT log MATCHES "check: every file parses")
  message(FATAL_ERROR "the merged report did not pass --check:\n${log}")
endif()
expect_same_as_single("${OUT}/merged-2")
reproduce(TRUE --merge "${OUT}/n3/shard-1" "${OUT}/n3/shard-2" "${OUT}/n3/shard-3" --out "${OUT}/merged-3")
expect_same_as_single("${OUT}/merged-3")
reproduce(TRUE --merge "${OUT}/n3/shard-3" "${OUT}/n3/shard-1" "${OUT}/n3/shard-2" --out "${OUT}/merged-3b")
expect_same_as_single("${OUT}/merged-3b")

# Under MPI (when darkbert::mpi is built: MPIEXEC is `mpiexec -n 2 ...`): rank r runs shard r+1 of 2 and
# rank 0 merges; the folder is the single run's. The shards go to OUT.shards/shard-K by default, or where
# --shard-dir says (that case on one task: it tests where the shards go, the default case the results).
if(MPIEXEC)
  set(mpi_env ${env} ${MPI_ENVIRONMENT})
  foreach(case default rank-dirs)
    set(extra "")
    if(case STREQUAL "rank-dirs")
      set(extra --shard-dir "${OUT}/mpi-scratch/rank-{rank}" --tasks MRPC)
    endif()
    string(TIMESTAMP t0 "%s")
    execute_process(COMMAND ${mpi_env} ${MPIEXEC} "${CLI}" reproduce ${options} --shard mpi --out "${OUT}/mpi-${case}" ${extra} --check
                    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
    string(TIMESTAMP t1 "%s")
    math(EXPR s "${t1} - ${t0}")
    if(NOT rc EQUAL 0 OR NOT log MATCHES "computed by the ranks" OR NOT log MATCHES "check: every file parses")
      message(FATAL_ERROR "mpiexec darkbert reproduce --shard mpi (${case}) failed (exit ${rc}):\n${log}\n${err}")
    endif()
    message(STATUS "mpiexec -n 2 darkbert reproduce --shard mpi (${case}): ${s} s")
    if(case STREQUAL "default")
      expect_same_as_single("${OUT}/mpi-${case}")
    endif()
  endforeach()
  if(NOT EXISTS "${OUT}/mpi-default.shards/shard-2/shard.json" OR NOT EXISTS "${OUT}/mpi-scratch/rank-1/shard.json")
    message(FATAL_ERROR "the MPI ranks did not write their shards where --shard-dir says")
  endif()
  # Every rank fails alike, and clearly, on a --shard-dir that would put both ranks in one folder.
  execute_process(COMMAND ${mpi_env} ${MPIEXEC} "${CLI}" reproduce ${options} --shard mpi --out "${OUT}/refused"
                  --shard-dir "${OUT}/one-folder" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "rank 1 \\(shard 2/2\\): --shard-dir '[^']*': give \\{shard\\} or \\{rank\\} in it")
    message(FATAL_ERROR "a --shard-dir without {shard} or {rank} was not refused on every rank:\n${log}\n${err}")
  endif()
else()
  message(STATUS "darkbert::mpi not built (no MPI found): --shard mpi not tested")
endif()

# Missing: the units named with the shard that should have had them.
reproduce(FALSE --merge "${OUT}/n3/shard-1" "${OUT}/n3/shard-3" --out "${OUT}/refused")
if(NOT err MATCHES "units missing from the shards given:\n  shard 2/3 should have had: [a-z]")
  message(FATAL_ERROR "a missing shard was not named:\n${err}")
endif()
# Duplicated: both folders named.
reproduce(FALSE --merge "${OUT}/n3/shard-1" "${OUT}/n3/shard-2" "${OUT}/n3/shard-3" "${OUT}/n2/shard-1" --out "${OUT}/refused")
if(NOT err MATCHES "is in two shards: ${OUT}/n3/shard-[123] and ${OUT}/n2/shard-1")
  message(FATAL_ERROR "a unit in two shards was not named with both folders:\n${err}")
endif()
# Foreign: shards of another configuration, named by folder and differing keys.
set(options --quick --quiet --seeds 3)
reproduce(FALSE --merge "${OUT}/n2/shard-1" "${OUT}/n2/shard-2" --out "${OUT}/refused")
if(NOT err MATCHES "${OUT}/n2/shard-1: shard 1/2 belongs to another study \\(seeds differ")
  message(FATAL_ERROR "a shard of another configuration was not refused by name:\n${err}")
endif()
if(EXISTS "${OUT}/refused/units")
  message(FATAL_ERROR "a refused merge wrote into its --out")
endif()
set(options --quick --quiet --seeds 2)
# Bad --shard values.
reproduce(FALSE --shard 4/3 --out "${OUT}/refused")
if(NOT err MATCHES "--shard '4/3': expected K/N with 1 <= K <= N")
  message(FATAL_ERROR "--shard 4/3 was not refused clearly:\n${err}")
endif()
execute_process(COMMAND ${env} --unset=SLURM_ARRAY_TASK_ID --unset=SLURM_ARRAY_TASK_COUNT --unset=SLURM_ARRAY_TASK_MIN
                "${CLI}" reproduce ${options} --shard auto --out "${OUT}/refused" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "--shard auto: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN not set")
  message(FATAL_ERROR "--shard auto outside Slurm was not refused clearly:\n${err}")
endif()
# --shard auto under a (simulated) array task: task 5 of --array=4-6 is shard 2/3, the units of shard-2 above.
execute_process(COMMAND ${env} SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3
                "${CLI}" reproduce ${options} --shard auto --out "${OUT}/n3/shard-2" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT log MATCHES "shard 2/3: 0 computed now")
  message(FATAL_ERROR "--shard auto as array task 5 of 4-6 did not resume shard 2/3:\n${log}\n${err}")
endif()

# --plan: runs nothing, prints every unit's shard and the prediction.
reproduce(TRUE --plan --ranks 2 --cores-per-rank 1)
if(NOT log MATCHES "table1/MRPC/pretrained/seed-1 +[0-9.]+ +[12]/2 +checkpoint/MRPC/seed-1" OR NOT log MATCHES "predicted on 2 ranks of 1 core, 1 worker each: [0-9.]+ s")
  message(FATAL_ERROR "--plan --ranks 2 did not print the shards and the prediction:\n${log}")
endif()
message(STATUS "${log}")
