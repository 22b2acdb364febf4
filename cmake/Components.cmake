# The optional components whose absence drops tests, recorded where they are detected so
# that CI can refuse to shrink silently (tests/ci/checks.sh, docs/ARCHITECTURE.md).
#
#   bench_component(<name> <found> <what depends on it>)
#     <found> is evaluated as a condition (a variable name or a value); a component
#     missing is a configure WARNING naming it and what is dropped.
#
# At the end of the configure (bench_write_components(), called by the top-level
# CMakeLists.txt) every component recorded is written to
# ${CMAKE_BINARY_DIR}/bench_components.txt, one a line, tab-separated:
#   found<TAB><name><TAB><what>   or   missing<TAB><name><TAB><what>
# tests/run.sh with CI=true fails when a line says missing (naming it); a build that
# leaves a component out on purpose (the sanitizer build without bench-train) is not
# checked that way.
include_guard(GLOBAL)

function(bench_component name found what)
  if(${found})
    set(state found)
  else()
    set(state missing)
    message(WARNING "${name}: not found or turned off; ${what} will not be built or tested")
  endif()
  set_property(GLOBAL APPEND PROPERTY BENCH_COMPONENTS "${state}\t${name}\t${what}")
endfunction()

function(bench_write_components)
  get_property(lines GLOBAL PROPERTY BENCH_COMPONENTS)
  set(text "")
  foreach(line IN LISTS lines)
    string(APPEND text "${line}\n")
  endforeach()
  file(WRITE "${CMAKE_BINARY_DIR}/bench_components.txt.tmp" "${text}")
  file(COPY_FILE "${CMAKE_BINARY_DIR}/bench_components.txt.tmp"
    "${CMAKE_BINARY_DIR}/bench_components.txt" ONLY_IF_DIFFERENT)
  file(REMOVE "${CMAKE_BINARY_DIR}/bench_components.txt.tmp")
endfunction()
