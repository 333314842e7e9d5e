# Runs `mpirun -np 2 fit_fault MODE` and expects a non-zero exit within MAX_SECONDS (a rank
# that throws or dies mid-fit ends the whole job, no hang). Called by CTest with -DMPIEXEC,
# -DTOOL, -DMODE, -DMAX_SECONDS.
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIEXEC} --oversubscribe --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1 -np 2 ${TOOL} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 90)
string(TIMESTAMP t1 "%s")
math(EXPR seconds "${t1} - ${t0}")
message("mpirun -np 2 fit_fault ${MODE}: exit '${rc}' after ${seconds} s\n${err}")
if("${rc}" STREQUAL "0")
  message(FATAL_ERROR "the job exited 0 although rank 1 failed")
endif()
if(NOT "${rc}" MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself: ${rc}")
endif()
if(seconds GREATER MAX_SECONDS)
  message(FATAL_ERROR "the job took ${seconds} s to end (more than ${MAX_SECONDS})")
endif()
