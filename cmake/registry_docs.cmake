# The files generated from the proof registry, rewritten after each build of
# attnconv when they differ (cmake -DATTNCONV=<program> -DSRC=<source dir> -P
# this file), so that adding a proof changes no other file by hand.
function(regenerate out)
  execute_process(COMMAND ${ATTNCONV} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "attnconv ${ARGN}: exit code ${code}")
  endif()
  set(path ${SRC}/${out})
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE ${path} "${text}")
    message(STATUS "regenerated ${out} from the proof registry")
  endif()
endfunction()

regenerate(cases/schema.json schema cases)
regenerate(reports/schema.json schema report)
regenerate(docs/tensor_dumps.md proofs --dumps-table)
