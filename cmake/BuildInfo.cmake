# The `bench_build_info` library behind common/build_info.h (--version of every binary):
# common/build_info.cc plus build_id.cc, generated in the build tree. The target
# bench_build_id runs cmake/WriteBuildInfo.cmake on every build, which rewrites build_id.cc
# (and build_id.txt, the id alone, read by tests/packages/) only when the id or the version
# changed: a new commit recompiles that one file and relinks the binaries, nothing else.
# Standard library only, so that a trainer-only build links it too.
#
#   -DBENCH_BUILD_ID=<id>   the id to print instead of the git commit (e.g. a build from a
#                           source tarball, which has no .git)
set(BENCH_BUILD_ID "" CACHE STRING
  "Build id printed by --version instead of the git commit (letters, digits, . _ + -)")
find_package(Git QUIET)

set(BENCH_BUILD_INFO_DIR ${CMAKE_BINARY_DIR}/generated/build_info)
add_custom_target(bench_build_id
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DOUTPUT_DIR=${BENCH_BUILD_INFO_DIR} -DPROJECT_VERSION=${PROJECT_VERSION}
    -DBUILD_ID=${BENCH_BUILD_ID} -DGIT_EXECUTABLE=${GIT_EXECUTABLE}
    -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${BENCH_BUILD_INFO_DIR}/build_id.cc ${BENCH_BUILD_INFO_DIR}/build_id.txt
  VERBATIM)

add_library(bench_build_info STATIC common/build_info.cc ${BENCH_BUILD_INFO_DIR}/build_id.cc)
target_include_directories(bench_build_info PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_features(bench_build_info PUBLIC cxx_std_17)
add_dependencies(bench_build_info bench_build_id)
