# `--help` of the darkbert binary and of every subcommand says what it does and shows an example.
foreach(command "" run tokenize annotate sweep bench "bench forward" "bench train-step" init finetune finetune-table pretrain)
  separate_arguments(args UNIX_COMMAND "${command}")
  execute_process(COMMAND "${CLI}" ${args} --help RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT log MATCHES "(\nExample: |e\\.g\\. )darkbert ${command}")
    message(FATAL_ERROR "darkbert ${command} --help shows no example of itself (exit ${rc}):\n${log}${err}")
  endif()
endforeach()
