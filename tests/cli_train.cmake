# End to end, on a slice of the real corpus and of SST-2 (a `tiny` BERT, 2 x 64):
#  1. `darkbert pretrain` for a few hundred steps: the held-out MLM loss falls well below its start;
#  2. the same run killed (SIGKILL) between two checkpoints and resumed with --resume ends with a
#     model.safetensors and an eval.csv (minus wall times) identical to the uninterrupted run's;
#  3. `darkbert finetune` of that model on a slice of SST-2 beats the majority-class rate.
# Under the sanitizers the runs are shorter (memory safety is the point there, not learning).
if(SANITIZED)
  set(steps 40)
  set(kill 25)
  set(docs 20)
  set(every 10)
else()
  set(steps 300)
  set(kill 130)
  set(docs 200)
  set(every 50)
endif()
file(REMOVE_RECURSE "${OUT}")
set(common pretrain --arch bert --recipe tiny --steps ${steps} --max-documents ${docs} --eval-every ${every}
           --checkpoint-every ${every} --probe-pairs 10 --quiet)

function(run what)
  execute_process(COMMAND "${CLI}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${log}\n${err}")
  endif()
  set(last_log "${log}" PARENT_SCOPE)
endfunction()

# Column `column` of the data rows of a CSV file, as a list.
function(csv_column file column out)
  file(STRINGS "${file}" lines)
  list(REMOVE_AT lines 0)
  set(values)
  foreach(line ${lines})
    string(REPLACE "," ";" fields "${line}")
    list(GET fields ${column} v)
    list(APPEND values ${v})
  endforeach()
  set(${out} ${values} PARENT_SCOPE)
endfunction()

# 1. Uninterrupted run.
run("pretrain" ${common} --out "${OUT}/straight")
if(NOT last_log MATCHES "heldout_accuracy=[0-9.]+ heldout_loss=[0-9.]+ steps=${steps} tokens_per_s=[0-9]+")
  message(FATAL_ERROR "pretrain did not end with its summary line:\n${last_log}")
endif()
csv_column("${OUT}/straight/eval.csv" 4 losses)
list(GET losses 0 first)
list(GET losses -1 final)
message(STATUS "held-out MLM loss ${first} -> ${final}")
if(NOT SANITIZED)
  # "well below": at least 2 nats under the start (10.3 for a uniform guess over 30,522 tokens), compared on
  # the integer parts (CMake has no floating-point arithmetic), which only makes the check stricter.
  string(REGEX REPLACE "\\..*" "" first_int "${first}")
  string(REGEX REPLACE "\\..*" "" final_int "${final}")
  math(EXPR drop "${first_int} - ${final_int}")
  if(drop LESS 2)
    message(FATAL_ERROR "held-out loss fell only from ${first} to ${final}")
  endif()
endif()

# 2. Killed after step ${kill} (between checkpoints), then resumed.
execute_process(COMMAND "${CLI}" ${common} --out "${OUT}/killed" --kill-after-step ${kill}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "the run meant to be killed after step ${kill} exited normally")
endif()
if(EXISTS "${OUT}/killed/model.safetensors")
  message(FATAL_ERROR "a killed run must not have written its final model")
endif()
run("pretrain --resume" ${common} --out "${OUT}/killed" --resume)
if(NOT last_log MATCHES "resuming")
  message(FATAL_ERROR "--resume did not resume from the checkpoint:\n${last_log}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/straight/model.safetensors" "${OUT}/killed/model.safetensors"
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "the killed-and-resumed model differs from the uninterrupted one")
endif()
foreach(column 0 1 3 4 5 6 7 9 11)  # every column but the wall times
  csv_column("${OUT}/straight/eval.csv" ${column} a)
  csv_column("${OUT}/killed/eval.csv" ${column} b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "eval.csv column ${column} differs after kill and resume:\n${a}\n${b}")
  endif()
endforeach()

# 3. Fine-tune on a slice of SST-2.
if(NOT SANITIZED)
  # 8 epochs: this 300-step model at 4 epochs ended at the majority class for 5 of 6 seeds × batch orders.
  run("finetune" finetune --model "${OUT}/straight" --task SST-2 --max-train 2000 --max-eval 400 --epochs 8 --lr 1e-3
      --out "${OUT}/sst2" --quiet)
  file(READ "${OUT}/sst2/metrics.json" metrics)
  string(JSON accuracy GET "${metrics}" scores accuracy)
  string(JSON majority GET "${metrics}" majority_rate)
  message(STATUS "SST-2 accuracy ${accuracy} (majority class ${majority})")
  if(NOT accuracy GREATER majority)
    message(FATAL_ERROR "fine-tuned accuracy ${accuracy} is not above the majority-class rate ${majority}")
  endif()
endif()

# 4. The Table 1 driver: three settings x two tasks on small slices, one seed. Every run lands in
#    runs.csv and table.md; a rerun skips what is done; a rerun with another recipe is refused by name.
set(table finetune-table --model "${OUT}/straight" --out "${OUT}/table" --tasks MRPC,STS-B --seeds 1 --max-train 48
          --max-eval 32 --quiet)
run("finetune-table" ${table} --epochs 1)
file(STRINGS "${OUT}/table/runs.csv" rows)
list(LENGTH rows count)
if(NOT count EQUAL 13)  # header + 3 settings x (MRPC accuracy, f1 + STS-B pearson, spearman)
  message(FATAL_ERROR "runs.csv has ${count} lines, expected 13:\n${rows}")
endif()
file(READ "${OUT}/table/table.md" markdown)
foreach(expected "| MRPC | accuracy |" "| STS-B | pearson |" "fine-tuned from random init" "82.3")
  string(FIND "${markdown}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "table.md lacks '${expected}':\n${markdown}")
  endif()
endforeach()
file(READ "${OUT}/table/runs.csv" before)
run("finetune-table rerun" ${table} --epochs 1)
file(READ "${OUT}/table/runs.csv" after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "a rerun of a finished table changed runs.csv")
endif()
execute_process(COMMAND "${CLI}" ${table} --epochs 2 RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "recipe.json has epochs = 1, this run asks for 2")
  message(FATAL_ERROR "a rerun with another recipe was not refused (${rc}): ${err}")
endif()
# A damaged runs.csv is reported with its file and line, not silently re-run or misread.
file(APPEND "${OUT}/table/runs.csv" "MRPC,pretrained,one,accuracy,0.5,0.5,1.0\n")
execute_process(COMMAND "${CLI}" ${table} --epochs 1 RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "runs.csv:14: not a number")
  message(FATAL_ERROR "a damaged runs.csv was not reported by line (${rc}): ${err}")
endif()
