# Runs examples/embed as a user would: on the example model (exit 0, the output's dtype,
# shape and values printed), on a missing file (exit 1, an error naming the file), and
# checks that the example was compiled with include/ and without src/ on its include path.
# cmake -DEXAMPLE=... -DMODEL=... -DINCLUDE_DIRECTORIES_FILE=... -DSOURCE_DIR=... -P this
cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND ${EXAMPLE} ${MODEL}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "onnxkit_embed_example ${MODEL}:\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the example exited with ${rc} on ${MODEL}")
endif()
foreach(expected
    "simplify  16 -> [0-9]+ nodes, check passed"
    "input     input: float\\[batch,3,32,32\\], fed \\[1,3,32,32\\]"
    "output    logits: float\\[1,10\\]  -?[0-9]+\\.[0-9]+ -?[0-9]+\\.[0-9]+ -?[0-9]+\\.[0-9]+ -?[0-9]+\\.[0-9]+ \\.\\.\\.")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "the example's output has no line matching '${expected}'")
  endif()
endforeach()

set(missing "${SOURCE_DIR}/examples/models/no_such_model.onnx")
execute_process(COMMAND ${EXAMPLE} ${missing}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "^error: .*no_such_model\\.onnx")
  message(FATAL_ERROR "a missing model should exit 1 with an error naming it; got ${rc}: ${err}")
endif()

file(READ ${INCLUDE_DIRECTORIES_FILE} include_directories)
string(STRIP "${include_directories}" include_directories)
if(NOT "${SOURCE_DIR}/include" IN_LIST include_directories)
  message(FATAL_ERROR "the example's include path lacks include/: ${include_directories}")
endif()
foreach(directory ${include_directories})
  if(directory MATCHES "^${SOURCE_DIR}/src")
    message(FATAL_ERROR "the example sees onnxkit's internal headers: ${directory}")
  endif()
endforeach()
