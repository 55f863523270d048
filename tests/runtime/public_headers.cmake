# Compiles every header of libhvd's public folder on its own, at C++17 and
# C++20, with that folder alone on the include path, from an empty
# directory: a public header that reaches into the project (common/,
# runtime/) or past C++17 fails here.
#   cmake -DCXX=compiler -DDIR=runtime/include -DWORK=dir -P public_headers.cmake
file(GLOB headers "${DIR}/hvd/*.h")
list(LENGTH headers n)
if(n EQUAL 0)
  message(FATAL_ERROR "no public headers in ${DIR}/hvd")
endif()
file(MAKE_DIRECTORY "${WORK}")
# C++17 is what the headers promise their users; 20 what the project uses.
foreach(std 17 20)
  foreach(h IN LISTS headers)
    execute_process(
      COMMAND "${CXX}" -std=c++${std} -fsyntax-only -Wall -Wextra -x c++
              -I "${DIR}" "${h}"
      WORKING_DIRECTORY "${WORK}"
      RESULT_VARIABLE rc
      ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${h} does not compile alone at C++${std}:\n${err}")
    endif()
    message(STATUS "${h}: compiles alone at C++${std}")
  endforeach()
endforeach()
