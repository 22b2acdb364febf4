# The one way to declare a test in benchfleet. Every test's ctest name starts with its
# room's name ("server.", "agent.", "e2e." ...) and carries that name as its label, so
# `ctest -L server` or `ctest -R '^agent\.'` select one room.
#
#   bench_gtest(<target>
#     PREFIX <name>            ctest names are "<name>.<Suite>.<Test>"; also their label
#     SOURCES <files...>
#     [LIBS <targets...>]      linked besides GoogleTest (gtest, gmock) and a main():
#                              common/test_main.cc's (OpenSSL as the product initialises
#                              it), or gtest_main's in a BENCH_TRAINER_ONLY build
#     [DEFINES <defs...>]      compile definitions (generator expressions allowed)
#     [DEPENDS <targets...>]   built first (binaries the test launches)
#     [TIMEOUT <seconds>]      per test; default: ctest's --timeout
#     [RESOURCE_LOCK <name>]   never run beside another test holding the same lock
#     [DISCOVERY_MODE PRE_TEST|POST_BUILD]
#     [DISCOVERY_TIMEOUT <seconds>])  default 60
#
#   bench_command_test(<name> LABEL <label> COMMAND <command...>)
#     a test that runs a command (a script, or a binary's command-line contract).
include_guard(GLOBAL)
include(GoogleTest)

function(bench_gtest target)
  cmake_parse_arguments(PARSE_ARGV 1 T ""
    "PREFIX;TIMEOUT;RESOURCE_LOCK;DISCOVERY_MODE;DISCOVERY_TIMEOUT"
    "SOURCES;LIBS;DEFINES;DEPENDS")
  if(NOT T_PREFIX OR NOT T_SOURCES)
    message(FATAL_ERROR "bench_gtest(${target}): PREFIX and SOURCES are required")
  endif()
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bench_gtest(${target}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  add_executable(${target} ${T_SOURCES})
  if(BENCH_TRAINER_ONLY)  # no common/ in that build, and no gRPC in its tests
    set(test_main GTest::gtest_main)
  else()
    set(test_main bench_test_main)  # common/CMakeLists.txt; targets resolve at generation
  endif()
  target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest ${test_main})
  if(TARGET GTest::gmock)  # a trainer-only build may find GoogleTest without gmock
    target_link_libraries(${target} PRIVATE GTest::gmock)
  endif()
  if(T_DEFINES)
    target_compile_definitions(${target} PRIVATE ${T_DEFINES})
  endif()
  if(T_DEPENDS)
    add_dependencies(${target} ${T_DEPENDS})
  endif()

  # One label: gtest_discover_tests cannot pass a list-valued property through.
  set(properties LABELS ${T_PREFIX})
  if(T_TIMEOUT)
    list(APPEND properties TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_RESOURCE_LOCK)
    list(APPEND properties RESOURCE_LOCK ${T_RESOURCE_LOCK})
  endif()
  if(NOT T_DISCOVERY_TIMEOUT)
    set(T_DISCOVERY_TIMEOUT 60)
  endif()
  set(mode)
  if(T_DISCOVERY_MODE)
    set(mode DISCOVERY_MODE ${T_DISCOVERY_MODE})
  endif()
  gtest_discover_tests(${target} TEST_PREFIX "${T_PREFIX}." ${mode}
    DISCOVERY_TIMEOUT ${T_DISCOVERY_TIMEOUT} PROPERTIES ${properties})
endfunction()

function(bench_command_test name)
  cmake_parse_arguments(PARSE_ARGV 1 T "" "LABEL" "COMMAND")
  if(NOT T_LABEL OR NOT T_COMMAND)
    message(FATAL_ERROR "bench_command_test(${name}): LABEL and COMMAND are required")
  endif()
  add_test(NAME ${name} COMMAND ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS ${T_LABEL})
endfunction()
