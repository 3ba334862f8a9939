# The six section programs (examples/study/*.cpp), each run as a researcher would, on the --quick study of
# cli_reproduce (fixture study_quick): its seconds-long BERT and GPT-2 from the cache, their MRPC fine-tuned
# checkpoints of seed 1, and small sizes. Each must exit 0 and write its section's main files; the numbers
# are the library's, tested header by header (tests/test_study_*.cpp).
get_filename_component(reproduce "${OUT}/../cli_reproduce" ABSOLUTE)
set(model "${reproduce}/cache/models/quick-study-bert-v1")
set(finetuned "${reproduce}/study/table1/checkpoints/MRPC/seed-1")
set(gpt2 "${reproduce}/cache/models/quick-study-gpt2-v1")
set(gpt2_finetuned "${reproduce}/study/gpt2/table1/checkpoints/MRPC/seed-1")
foreach(dir "${model}" "${finetuned}" "${gpt2}" "${gpt2_finetuned}")
  if(NOT EXISTS "${dir}/config.json")
    message(FATAL_ERROR "${dir} is missing: cli_reproduce (fixture study_quick) must run first")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
set(env ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${reproduce}/cache")

function(section program)  # section(PROGRAM RUN_NAME OUTPUT_FILE args...)
  list(POP_FRONT ARGN name expected)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${env} "${BIN_DIR}/darkbert_${program}" --out "${OUT}/${name}" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR s "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "darkbert_${program} ${ARGN} failed (exit ${rc}):\n${log}\n${err}")
  endif()
  file(GLOB_RECURSE found "${OUT}/${name}/*${expected}")
  if(NOT found)
    message(FATAL_ERROR "darkbert_${program} wrote no ${expected} into ${OUT}/${name}:\n${log}")
  endif()
  message(STATUS "darkbert_${program} (${name}): ${s} s")
endfunction()

foreach(arch bert gpt2)
  if(arch STREQUAL "gpt2")
    set(model "${gpt2}")
    set(finetuned "${gpt2_finetuned}")
  endif()
  section(attention_patterns patterns-${arch} head_classes.csv --model "${model}" --task MRPC --max-examples 8 --seed 1 --quick)
  section(framenet_heads framenet-${arch} framenet_heads.png --model "${model}" --max-examples 8 --seed 1)
  section(finetune_change change-${arch} .csv --model "${model}" --finetuned "${finetuned}" --task MRPC --max-examples 8 --seed 1)
  section(linguistic_features features-${arch} .csv --model "${model}" --task MRPC --max-examples 8 --seed 1)
  section(token_to_token relations-${arch} .csv --model "${model}" --task MRPC --max-examples 8 --seed 1 --ud-sentences 20)
  section(disable_heads disable-${arch} head_scores.csv --model "${finetuned}" --task MRPC --max-examples 16 --seed 1)
endforeach()
# GPT-2 with the replication's classes and CNN, on its fine-tuned model.
section(attention_patterns patterns-replication head_classes.csv --model "${gpt2_finetuned}" --task MRPC --max-examples 8
        --seed 1 --quick --scheme replication)
# Without --model, --arch picks the default model: here the cached seconds-long GPT-2 stands in for it
# (DARKBERT_CACHE holds no default model, and pretraining one is minutes), so only the refusal of a bad
# --arch is checked.
execute_process(COMMAND ${env} "${BIN_DIR}/darkbert_framenet_heads" --arch roberta --out "${OUT}/refused"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "--arch")
  message(FATAL_ERROR "darkbert_framenet_heads --arch roberta was not refused by name:\n${log}\n${err}")
endif()
