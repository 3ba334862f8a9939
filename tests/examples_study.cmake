# The six section programs (examples/study/*.cpp), each run once as a researcher would, on the --quick
# study of cli_reproduce (fixture study_quick): its seconds-long model from the cache, its MRPC fine-tuned
# checkpoint of seed 1, and small sizes. Each must exit 0 and write its section's main files; the numbers
# are the library's, tested header by header (tests/test_study_*.cpp).
get_filename_component(reproduce "${OUT}/../cli_reproduce" ABSOLUTE)
set(model "${reproduce}/cache/models/quick-study-bert-v1")
set(finetuned "${reproduce}/study/table1/checkpoints/MRPC/seed-1")
if(NOT EXISTS "${model}/config.json" OR NOT EXISTS "${finetuned}/config.json")
  message(FATAL_ERROR "${model} or ${finetuned} is missing: cli_reproduce (fixture study_quick) must run first")
endif()
file(REMOVE_RECURSE "${OUT}")
set(env ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${reproduce}/cache")

function(section program)  # section(PROGRAM OUTPUT_FILE args...)
  list(POP_FRONT ARGN expected)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${env} "${BIN_DIR}/darkbert_${program}" --out "${OUT}/${program}" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR s "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "darkbert_${program} ${ARGN} failed (exit ${rc}):\n${log}\n${err}")
  endif()
  file(GLOB_RECURSE found "${OUT}/${program}/*${expected}")
  if(NOT found)
    message(FATAL_ERROR "darkbert_${program} wrote no ${expected} into ${OUT}/${program}:\n${log}")
  endif()
  message(STATUS "darkbert_${program}: ${s} s")
endfunction()

section(attention_patterns head_classes.csv --model "${model}" --task MRPC --max-examples 8 --seed 1 --quick)
section(framenet_heads framenet_heads.png --model "${model}" --max-examples 8 --seed 1)
section(finetune_change .csv --model "${model}" --finetuned "${finetuned}" --task MRPC --max-examples 8 --seed 1)
section(linguistic_features .csv --model "${model}" --task MRPC --max-examples 8 --seed 1)
section(token_to_token .csv --model "${model}" --task MRPC --max-examples 8 --seed 1 --ud-sentences 20)
section(disable_heads head_scores.csv --model "${finetuned}" --task MRPC --max-examples 16 --seed 1)
