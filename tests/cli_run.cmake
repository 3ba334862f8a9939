# `darkbert run --check` on every golden cases file, in float32 and float64: every output (and every labelled
# case's loss and parameter gradients) is written under
# its expected base name and agrees with the expected values within the fixture tolerance.
file(GLOB case_files "${SHARED}/golden/cases/*.json")
list(LENGTH case_files n)
if(n LESS 14)
  message(FATAL_ERROR "expected at least 14 cases files in ${SHARED}/golden/cases, found ${n}")
endif()
foreach(dtype float32 float64)
  foreach(cases ${case_files})
    get_filename_component(stem ${cases} NAME_WE)
    set(out "${OUT}/${dtype}/${stem}")
    file(REMOVE_RECURSE "${out}")
    execute_process(COMMAND "${CLI}" run --cases "${cases}" --out "${out}" --dtype ${dtype} --check
                    RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "darkbert run failed on ${cases} (${dtype}):\n${log}\n${err}")
    endif()
    # Every expected file named in the cases file must exist in the output folder under its base name.
    file(READ "${cases}" json)
    string(JSON ncases LENGTH "${json}" cases)
    math(EXPR last "${ncases} - 1")
    foreach(i RANGE ${last})
      string(JSON outputs GET "${json}" cases ${i} outputs)
      string(JSON nout LENGTH "${outputs}")
      math(EXPR lastout "${nout} - 1")
      foreach(k RANGE ${lastout})
        string(JSON key MEMBER "${outputs}" ${k})
        string(JSON rel GET "${outputs}" ${key})
        get_filename_component(base "${rel}" NAME)
        if(NOT EXISTS "${out}/${base}")
          message(FATAL_ERROR "${cases}: output ${out}/${base} was not written")
        endif()
      endforeach()
      # A labelled case also writes its loss and every parameter's gradient (checked by --check above).
      foreach(field loss_file grads_file)
        string(JSON rel ERROR_VARIABLE missing GET "${json}" cases ${i} ${field})
        if(NOT missing)
          get_filename_component(base "${rel}" NAME)
          if(NOT EXISTS "${out}/${base}")
            message(FATAL_ERROR "${cases}: ${field} ${out}/${base} was not written")
          endif()
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

# --disable adds heads to the case's own mask: the result must then differ from the expected values.
execute_process(COMMAND "${CLI}" run --cases "${SHARED}/golden/cases/bert_model.json" --out "${OUT}/disabled"
                --disable 0:1,2:all --check RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "darkbert run --disable 0:1,2:all still matched the undisabled expected outputs:\n${log}")
endif()
execute_process(COMMAND "${CLI}" run --cases "${SHARED}/golden/cases/bert_model.json" --out "${OUT}/bad" --disable 0-1
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "LAYER:HEAD")
  message(FATAL_ERROR "a malformed --disable was not rejected with a clear message: ${err}")
endif()

# An output the model cannot produce (a pooler that GPT-2 lacks) is refused before anything is written,
# naming the case, the output and the missing tensor.
file(REMOVE_RECURSE "${OUT}/nopooler")
execute_process(COMMAND "${CLI}" run --cases "${SHARED}/golden/cases/bert_seqcls3.json"
                --model "${SHARED}/golden/models/gpt2_lm" --out "${OUT}/nopooler"
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "case 'forward' asks for output 'pooled', which needs the tensor 'pooler.dense.weight'")
  message(FATAL_ERROR "a missing pooler was not refused by name: ${err}")
endif()
file(GLOB written "${OUT}/nopooler/*")
if(written)
  message(FATAL_ERROR "outputs were written before the missing pooler was reported: ${written}")
endif()
