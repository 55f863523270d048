# One line per optional part of the build, in one form, so that a newcomer
# reads at configure time what is built and what to install for the rest:
#   hvd: <part> on (<what was found>)
#   hvd: <part> off (<why>; install <package>)
# Configure never fails for an optional part: a part that is missing, or
# whose probe would be a hard error in CMake's own module, is turned off.
#
# Each part can be forced missing with CMAKE_DISABLE_FIND_PACKAGE_<Name>,
# the switch CMake already has for find_package; parts found without
# find_package (NCCL, cuDNN) honour the same spelling (hvd_part_disabled).

function(hvd_part_on part what)
  message(STATUS "hvd: ${part} on (${what})")
endfunction()

# why: what is missing; package: the Debian package(s) or the step that
# brings it back ("" when the part is off by choice, not by a lack).
function(hvd_part_off part why package)
  if(package STREQUAL "")
    message(STATUS "hvd: ${part} off (${why})")
  else()
    message(STATUS "hvd: ${part} off (${why}; install ${package})")
  endif()
endfunction()

# Sets out to TRUE when the caller forced package `name` missing.
function(hvd_part_disabled out name)
  if(CMAKE_DISABLE_FIND_PACKAGE_${name})
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()
