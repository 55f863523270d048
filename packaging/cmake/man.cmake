# A man page from a program's --help, at build time:
#   cmake -DPROGRAM=exe -DNAME=horovodrun -DSECTION=1 -DSUMMARY="..."
#         -DVERSION=0.1.0 -DOUT=horovodrun.1 -P man.cmake
# The help text is the page's description, kept as written (no filling).
execute_process(COMMAND ${PROGRAM} --help
  OUTPUT_VARIABLE help ERROR_VARIABLE help_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "${PROGRAM} --help failed (${rc}): ${help_err}")
endif()
# roff: a backslash is written \e; a line starting with . or ' would be a
# request, so it gets the zero-width \& in front; '-' is a hyphen unless
# escaped, and options are typed with minus signs.
string(REPLACE "\\" "\\e" help "${help}")
string(REPLACE "-" "\\-" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER "${NAME}" upper)
string(REPLACE "-" "\\-" name_roff "${NAME}")
file(WRITE ${OUT}
".TH ${upper} ${SECTION} \"\" \"hvd ${VERSION}\" \"hvd\"
.SH NAME
${name_roff} \\- ${SUMMARY}
.SH DESCRIPTION
.nf
${help}.fi
.SH SEE ALSO
${SEE_ALSO}
")
