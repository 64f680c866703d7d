/* SPDX-License-Identifier: BSD-3-Clause */
/* Assertions for the unit tests of core logic, which run without MPI. */
#ifndef GMPI_UNIT_UTIL_H
#define GMPI_UNIT_UTIL_H

#include <stdio.h>

static int failures;

#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) {                                                                                \
      failures++;                                                                                  \
      fprintf(stderr, "FAIL %s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, a_, b_); \
    }                                                                                              \
  } while (0)

#endif
