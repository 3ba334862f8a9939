# Every output the command line writes reports a full disk: the output is pointed at /dev/full (directly,
# or through a symlink placed where the command writes inside its --out folder), and the command must exit
# non-zero with "No space left on device" and the file's name, instead of exiting 0 with a torn file.
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
if(NOT EXISTS /dev/full)
  message(FATAL_ERROR "/dev/full is missing; this test needs it")
endif()
get_filename_component(tests_dir "${CMAKE_SCRIPT_MODE_FILE}" DIRECTORY)
set(vocab "${SHARED}/data/vocab/bert-base-uncased")
set(ENV{DARKBERT_DATA} "${SHARED}/data")
set(ENV{DARKBERT_CACHE} "${OUT}/cache")

# expect_full(<what> <name expected in the error> <command...>): runs the command, which must fail naming
# the file and the full disk.
function(expect_full what name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${what}: exited 0 although its output is on a full disk\n${log}\n${err}")
  endif()
  string(FIND "${err}" "No space left on device" nospace)
  string(FIND "${err}" "${name}" named)
  if(nospace EQUAL -1 OR named EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${name}' and 'No space left on device' in the error, got:\n${err}")
  endif()
  message(STATUS "${what}: ${err}")
endfunction()

# Same, with standard output on the full disk.
function(expect_full_stdout what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_FILE /dev/full ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "standard output: write failed: No space left on device")
    message(FATAL_ERROR "${what}: a failed write to standard output was not reported (exit ${rc}):\n${err}")
  endif()
  message(STATUS "${what}: ${err}")
endfunction()

# darkbert run: a forward output, the loss .npy and the gradient safetensors of a labelled case.
set(cases "${SHARED}/golden/cases/bert_seqcls3.json")
foreach(file forward.pooled.npy loss.loss.npy loss.grads.safetensors)
  set(out "${OUT}/run-${file}")
  file(MAKE_DIRECTORY "${out}")
  file(CREATE_LINK /dev/full "${out}/${file}" SYMBOLIC)
  expect_full("run writing ${file}" "${file}" "${CLI}" run --cases "${cases}" --out "${out}")
endforeach()
expect_full_stdout("run's report" "${CLI}" run --cases "${SHARED}/golden/cases/bert_model.json" --out "${OUT}/run-stdout")

# darkbert init: config.json, model.safetensors and the copied vocabulary.
foreach(file config.json model.safetensors vocab.txt)
  set(out "${OUT}/init-${file}")
  file(MAKE_DIRECTORY "${out}")
  file(CREATE_LINK /dev/full "${out}/${file}" SYMBOLIC)
  expect_full("init writing ${file}" "${file}" "${CLI}" init --config "${tests_dir}/data/tiny_bert_sst2.json"
              --out "${out}" --tokenizer "${vocab}")
endforeach()

# darkbert tokenize: the output file and its report on standard output.
file(WRITE "${OUT}/in.jsonl" "{\"text\": \"The cat sat.\"}\n")
expect_full("tokenize --output" "/dev/full" "${CLI}" tokenize --tokenizer "${vocab}" --input "${OUT}/in.jsonl"
            --output /dev/full)
expect_full_stdout("tokenize's report" "${CLI}" tokenize --tokenizer "${vocab}" --input "${OUT}/in.jsonl"
                   --output "${OUT}/in.out")

# darkbert annotate: the predictions and a saved model, trained on a few sentences of UD EWT dev.
file(READ "${SHARED}/data/ud/en_ewt-ud-dev.conllu" dev LIMIT 20000)
string(FIND "${dev}" "\n\n" end REVERSE)
string(SUBSTRING "${dev}" 0 ${end} dev)
file(WRITE "${OUT}/small.conllu" "${dev}\n\n")
expect_full("annotate --save-model" "/dev/full" "${CLI}" annotate --train "${OUT}/small.conllu" --save-model /dev/full)
execute_process(COMMAND "${CLI}" annotate --train "${OUT}/small.conllu" --save-model "${OUT}/small.model"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "annotate --train on a small file failed:\n${err}")
endif()
expect_full("annotate --output" "/dev/full" "${CLI}" annotate --model "${OUT}/small.model"
            --input "${OUT}/small.conllu" --output /dev/full)
expect_full_stdout("annotate --score" "${CLI}" annotate --model "${OUT}/small.model" --input "${OUT}/small.conllu"
                   --output "${OUT}/small.pred.conllu" --score)

# darkbert sweep: every result file (CSV, JSON, .npy, the figure, summary.json).
execute_process(COMMAND "${CLI}" init --config "${tests_dir}/data/tiny_bert_sst2.json" --out "${OUT}/model"
                --tokenizer "${vocab}" --seed 3 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "darkbert init failed:\n${err}")
endif()
foreach(file head_scores.csv layer_scores.json head_scores.npy head_scores_delta.png summary.json)
  set(out "${OUT}/sweep-${file}")
  file(MAKE_DIRECTORY "${out}")
  file(CREATE_LINK /dev/full "${out}/${file}" SYMBOLIC)
  expect_full("sweep writing ${file}" "${file}" "${CLI}" sweep --model "${OUT}/model" --task SST-2 --max-examples 8
              --batch-size 8 --max-length 32 --quiet --out "${out}")
endforeach()

# darkbert_framenet_selection --output (the example program beside the CLI).
expect_full("framenet_selection --output" "/dev/full" "${FRAMENET}" --sample --output /dev/full)
