# Guards what the public headers cost a user (issue 16), run by CTest (tests/CMakeLists.txt):
#  1. #include <eagerflow/eagerflow.h> preprocesses to at most MAX_LINES lines
#     (`${CXX} -std=c++20 -E`, line markers included);
#  2. eagerflow/nn/layer.h does not pull in the tracing machinery (function/, trace/, exec/,
#     passes/): ef::function(layer) is in eagerflow/nn/layer_function.h;
#  3. inside src/, core includes nothing from kernels or ops, and kernels nothing from ops
#     (kernels sit between core and ops; no include cycles).
# Called with -DCXX=<compiler> -DINCLUDE_DIR=<include/> -DSRC_DIR=<src/> -DWORK_DIR=<scratch>
# -DMAX_LINES=<n> (0: skip check 1, for a compiler or standard library it was not measured with).
set(failures "")
file(MAKE_DIRECTORY ${WORK_DIR})

# 1. The umbrella header's preprocessed size.
if(MAX_LINES GREATER 0)
  file(WRITE ${WORK_DIR}/umbrella.cpp "#include <eagerflow/eagerflow.h>\n")
  execute_process(COMMAND ${CXX} -std=c++20 -I${INCLUDE_DIR} -E ${WORK_DIR}/umbrella.cpp
                  OUTPUT_FILE ${WORK_DIR}/umbrella.ii RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "preprocessing eagerflow/eagerflow.h failed:\n${err}")
  endif()
  file(READ ${WORK_DIR}/umbrella.ii text)
  string(REGEX REPLACE "[^\n]" "" newlines "${text}")
  string(LENGTH "${newlines}" lines)
  message(STATUS "eagerflow/eagerflow.h preprocesses to ${lines} lines (at most ${MAX_LINES})")
  if(lines GREATER MAX_LINES)
    string(APPEND failures "eagerflow/eagerflow.h preprocesses to ${lines} lines, more than ${MAX_LINES}: "
           "a public header includes more than its declarations need (move bodies and their includes to src/, "
           "use <iosfwd> for streams, a pimpl for private state)\n")
  endif()
endif()

# 2. nn/layer.h without the tracing machinery.
file(WRITE ${WORK_DIR}/layer.cpp "#include <eagerflow/nn/layer.h>\n")
execute_process(COMMAND ${CXX} -std=c++20 -I${INCLUDE_DIR} -M ${WORK_DIR}/layer.cpp
                OUTPUT_VARIABLE deps RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "listing the includes of eagerflow/nn/layer.h failed:\n${err}")
endif()
string(REGEX MATCHALL "eagerflow/(function|trace|exec|passes)/[a-z_]+\\.h" machinery "${deps}")
if(machinery)
  list(REMOVE_DUPLICATES machinery)
  string(APPEND failures "eagerflow/nn/layer.h includes the tracing machinery: ${machinery}\n")
endif()

# 3. Layering inside src/: core -> (nothing of ours above it), kernels -> core, ops -> kernels.
foreach(rule "core:kernels|ops" "kernels:ops")
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 lower)
  list(GET parts 1 upper)
  file(GLOB_RECURSE files ${SRC_DIR}/${lower}/*.h ${SRC_DIR}/${lower}/*.cpp ${SRC_DIR}/${lower}/*.inc)
  foreach(f ${files})
    file(STRINGS ${f} bad REGEX "^#include \"(${upper})/")
    if(bad)
      string(APPEND failures "${f} includes ${bad}: src/${lower} must not depend on src/${upper}\n")
    endif()
  endforeach()
endforeach()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
