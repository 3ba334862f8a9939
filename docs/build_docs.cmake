# Builds the API documentation (cmake -DDOXYGEN=... -DSOURCE=<checkout> -DOUT=<dir> -P docs/build_docs.cmake);
# run by the `docs` CTest test. docs/Doxyfile turns every warning — an undocumented public symbol, a
# broken reference — into a failure; detail:: namespaces are excluded.
if(NOT DOXYGEN)
  message(FATAL_ERROR "doxygen not found: install the Debian package doxygen (.ci/install-deps does)")
endif()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "DARKBERT_DOCS_OUT=${OUT}" "${DOXYGEN}" docs/Doxyfile
                WORKING_DIRECTORY "${SOURCE}" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
  message(FATAL_ERROR "doxygen failed (exit ${rc}):\n${err}\n${log}")
endif()
file(READ "${OUT}/html/index.html" index)
foreach(section "§3.1" "§3.2" "§3.3" "§3.4" "§3.5" "§3.6")
  if(NOT index MATCHES "${section}")
    message(FATAL_ERROR "the documentation's landing page does not map paper ${section} to the API")
  endif()
endforeach()
message(STATUS "API documentation: ${OUT}/html/index.html")
