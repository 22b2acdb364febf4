// FUZZ_CHECK(condition): the fuzz targets' contract checks. When `condition` is false it
// prints "file:line: FUZZ_CHECK(condition) failed" on stderr and aborts, which libFuzzer
// reports as a crash (with the input saved) and the replay driver as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                     \
  do {                                                                            \
    if (!(condition)) {                                                           \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, \
                   #condition);                                                   \
      std::abort();                                                               \
    }                                                                             \
  } while (0)
