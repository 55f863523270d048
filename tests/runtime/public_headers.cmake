# Compiles every header of libhvd's public folder on its own, with that
# folder alone on the include path, from an empty directory: a public
# header that reaches into the project (common/, runtime/) fails here.
#   cmake -DCXX=compiler -DDIR=runtime/include -DWORK=dir -P public_headers.cmake
file(GLOB headers "${DIR}/hvd/*.h")
list(LENGTH headers n)
if(n EQUAL 0)
  message(FATAL_ERROR "no public headers in ${DIR}/hvd")
endif()
file(MAKE_DIRECTORY "${WORK}")
foreach(h IN LISTS headers)
  execute_process(
    COMMAND "${CXX}" -std=c++20 -fsyntax-only -Wall -Wextra -x c++ -I "${DIR}"
            "${h}"
    WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${h} does not compile alone:\n${err}")
  endif()
  message(STATUS "${h}: compiles alone")
endforeach()
