# Run-time kernel dispatch, end to end through the `darkbert` binary:
# - `darkbert --version` names the kernel path: avx512 when /proc/cpuinfo lists AVX-512 F/BW/DQ/VL, else
#   avx2 when it lists AVX2 and FMA, else blas; blas under DARKBERT_KERNEL=blas, avx512 or avx2 under
#   DARKBERT_KERNEL=avx512|avx2 where the CPU runs it (elsewhere that request is refused by name), and an
#   unknown DARKBERT_KERNEL is refused by name;
# - the forward pass of BERT, RoBERTa, DistilBERT and GPT-2 on every other path the machine runs agrees
#   with the one on the default path within the float32 fixture tolerance (`darkbert run --against`);
# - the comparison is not vacuous: a run with a disabled head does not agree.
cmake_minimum_required(VERSION 3.25)  # if(IN_LIST)
include("${CMAKE_CURRENT_LIST_DIR}/../cmake/expected_kernel_path.cmake")
set(expect_path ${expected_kernel_path})

function(version_line env_value out_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_KERNEL=${env_value}" "${CLI}" --version
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  set(${out_var} "${rc};${log}${err}" PARENT_SCOPE)
endfunction()

version_line(auto result)
if(NOT result MATCHES "^0;darkbert [0-9]+\\.[0-9]+\\.[0-9]+ \\(kernel: ${expect_path},")
  message(FATAL_ERROR "darkbert --version should name the '${expect_path}' kernel path: ${result}")
endif()
version_line(blas result)
if(NOT result MATCHES "^0;darkbert [0-9.]+ \\(kernel: blas,")
  message(FATAL_ERROR "DARKBERT_KERNEL=blas did not force the BLAS path: ${result}")
endif()
foreach(path avx512 avx2)
  version_line(${path} result)
  if(path IN_LIST runnable_kernel_paths)
    if(NOT result MATCHES "^0;darkbert [0-9.]+ \\(kernel: ${path},")
      message(FATAL_ERROR "DARKBERT_KERNEL=${path} did not force the ${path} path: ${result}")
    endif()
  elseif(result MATCHES "^0;" OR NOT result MATCHES "DARKBERT_KERNEL='${path}': this CPU cannot run")
    message(FATAL_ERROR "DARKBERT_KERNEL=${path} on a CPU without it was not refused by name: ${result}")
  endif()
endforeach()
version_line(avx3 result)
if(result MATCHES "^0;" OR NOT result MATCHES "DARKBERT_KERNEL='avx3'")
  message(FATAL_ERROR "an unknown DARKBERT_KERNEL was not refused by name: ${result}")
endif()

foreach(stem bert_model roberta_model distilbert_seqcls gpt2_lm)
  set(cases "${SHARED}/golden/cases/${stem}.json")
  file(REMOVE_RECURSE "${OUT}/${stem}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env DARKBERT_KERNEL=auto "${CLI}" run --cases "${cases}"
                  --out "${OUT}/${stem}/default" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "darkbert run on the default path failed for ${cases}:\n${log}\n${err}")
  endif()
  foreach(path ${runnable_kernel_paths})
    if(path STREQUAL expect_path)
      continue()
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env DARKBERT_KERNEL=${path} "${CLI}" run --cases "${cases}"
                    --out "${OUT}/${stem}/${path}" --against "${OUT}/${stem}/default"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT log MATCHES "all outputs within tolerance")
      message(FATAL_ERROR "the ${path} path disagrees with the ${expect_path} path on ${cases}:\n${log}\n${err}")
    endif()
    message(STATUS "${stem}: ${path} agrees with ${expect_path}")
  endforeach()
endforeach()

execute_process(COMMAND ${CMAKE_COMMAND} -E env DARKBERT_KERNEL=blas "${CLI}" run
                --cases "${SHARED}/golden/cases/bert_model.json" --out "${OUT}/disabled" --disable 0:1
                --against "${OUT}/bert_model/default" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "darkbert run --against did not notice a disabled head:\n${log}")
endif()
