# Runs `mpirun -np 2 fit_fault MODE` and expects it to end by itself within MAX_SECONDS: with a
# non-zero exit (a rank that throws, exits with an error or dies ends the whole job, no hang),
# or with 0 where EXPECT is "ok" (every rank ended normally). Called by CTest with -DMPIEXEC,
# -DTOOL, -DMODE, -DMAX_SECONDS, optionally -DEXPECT=ok.
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIEXEC} --oversubscribe --bind-to none --mca btl self,vader -x OMP_NUM_THREADS=1 -np 2 ${TOOL} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 90)
string(TIMESTAMP t1 "%s")
math(EXPR seconds "${t1} - ${t0}")
message("mpirun -np 2 fit_fault ${MODE}: exit '${rc}' after ${seconds} s\n${err}")
if(NOT "${rc}" MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself: ${rc}")
endif()
if("${EXPECT}" STREQUAL "ok")
  if(NOT "${rc}" STREQUAL "0")
    message(FATAL_ERROR "the job exited ${rc} although every rank ended normally")
  endif()
elseif("${rc}" STREQUAL "0")
  message(FATAL_ERROR "the job exited 0 although rank 1 failed")
endif()
if(seconds GREATER MAX_SECONDS)
  message(FATAL_ERROR "the job took ${seconds} s to end (more than ${MAX_SECONDS})")
endif()
