# `cmake --install` of onnxkit's build into a fresh prefix, then two programs built against
# that prefix alone with find_package(onnxkit): examples/embed (C++) and tests/install/c_consumer
# (C), each run on the example model. Fails when the package, its headers or its libraries
# are incomplete, or when a consumer's compile line reaches into onnxkit's source tree.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P this
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "${command} failed (${rc}):\n${out}${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed include/onnxkit/onnxkit.h include/onnxkit/onnxkit_c.h
                  include/onnxkit/custom_op.h lib/libonnxkit_lib.a lib/libonnxkit_c.a
                  lib/cmake/onnxkit/onnxkitConfig.cmake bin/onnxkit)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "cmake --install did not install ${installed}")
  endif()
endforeach()

find_program(CCACHE_PROGRAM ccache)
set(launcher)
if(CCACHE_PROGRAM)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE_PROGRAM}
               -DCMAKE_C_COMPILER_LAUNCHER=${CCACHE_PROGRAM})
endif()
set(model ${SOURCE_DIR}/examples/models/tiny_cnn.onnx)
foreach(consumer embed:examples/embed:onnxkit_embed_example
                 c:tests/install/c_consumer:onnxkit_c_consumer)
  string(REPLACE ":" ";" parts ${consumer})
  list(GET parts 0 name)
  list(GET parts 1 source)
  list(GET parts 2 program)
  set(build ${WORK_DIR}/${name})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/${source} -B ${build} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
      ${launcher})
  run(${CMAKE_COMMAND} --build ${build})
  file(READ ${build}/compile_commands.json commands)
  if(NOT commands MATCHES "${prefix}/include" OR commands MATCHES "${SOURCE_DIR}/(include|src)")
    message(FATAL_ERROR "${name}: the compile line should use ${prefix}/include only:\n${commands}")
  endif()
  run(${build}/${program} ${model})
  message(STATUS "${program}:\n${output}")
  set(results_${name} "${output}")
endforeach()
if(NOT results_embed MATCHES "output    logits: float\\[1,10\\]")
  message(FATAL_ERROR "examples/embed printed no logits line")
endif()
if(NOT results_c MATCHES "onnxkit 0\\.1\\.0\ninput input: float\\[batch,3,32,32\\]")
  message(FATAL_ERROR "the C consumer printed something else")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
