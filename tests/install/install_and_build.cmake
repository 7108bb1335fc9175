# Installs libhpf into a temporary prefix, builds examples/consumer against it with
# find_package(hpf), and runs it. Run by ctest as: cmake -DBUILD_DIR=.. -DSOURCE_DIR=.. -DWORK_DIR=.. -P
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${err}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
step(${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/consumer" -B "${WORK_DIR}/build" -G Ninja
     "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/consumer")
# The installed tool runs from the prefix too (RPATH $ORIGIN/../lib).
step("${WORK_DIR}/prefix/bin/hpf" --version)
if(NOT EXISTS "${WORK_DIR}/prefix/lib/hpf/hwdb.sqlite")
  message(FATAL_ERROR "hwdb.sqlite not installed beside the library")
endif()
# ... and finds the installed hardware database beside the installed library.
step("${WORK_DIR}/prefix/bin/hpf" hwdb show h100-sxm)
