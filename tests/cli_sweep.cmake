# `darkbert init` a tiny random BERT classifier with the real bert-base-uncased vocabulary, then
# `darkbert sweep --naive` on SST-2 dev: the prefix-cached and naive sweeps must agree, and every output
# file must be written.
file(REMOVE_RECURSE "${OUT}")
get_filename_component(tests_dir "${CMAKE_SCRIPT_MODE_FILE}" DIRECTORY)
execute_process(COMMAND "${CLI}" init --config "${tests_dir}/data/tiny_bert_sst2.json" --out "${OUT}/model"
                --tokenizer "${SHARED}/data/vocab/bert-base-uncased" --seed 3
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "darkbert init failed:\n${log}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DATA=${SHARED}/data" "DARKBERT_CACHE=${OUT}/cache"
                "${CLI}" sweep --model "${OUT}/model" --task SST-2 --max-examples 40 --batch-size 16 --max-length 48
                --naive --quiet --out "${OUT}/results"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
message(STATUS "${log}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "darkbert sweep failed:\n${log}\n${err}")
endif()
if(NOT log MATCHES "40 examples in 3 batches" OR NOT log MATCHES "scores identical" OR NOT log MATCHES "layer  2:")
  message(FATAL_ERROR "unexpected sweep report:\n${log}")
endif()
foreach(f head_scores.csv head_scores.json head_scores.npy layer_scores.csv layer_scores.json layer_scores.npy
          head_scores_delta.png summary.json)
  if(NOT EXISTS "${OUT}/results/${f}")
    message(FATAL_ERROR "sweep did not write ${f}")
  endif()
endforeach()
file(READ "${OUT}/results/summary.json" summary)
string(JSON identical GET "${summary}" naive_scores_identical)
if(NOT identical)
  message(FATAL_ERROR "summary.json says the sweeps differ")
endif()
# A model without a classifier is refused with a clear message.
execute_process(COMMAND "${CLI}" sweep --model "${SHARED}/golden/models/bert_model" --task SST-2
                --tokenizer "${SHARED}/data/vocab/bert-base-uncased" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "no sequence classification head")
  message(FATAL_ERROR "a model without classifier was not refused clearly: ${err}")
endif()
