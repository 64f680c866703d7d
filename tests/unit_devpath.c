/* SPDX-License-Identifier: BSD-3-Clause */
/* The device reduction path of every valid (dtype, op): NCCL-native pairs go native, complex
 * sum as real pairs, avg as sum + division, everything else through gather + kernel, and no
 * valid pair is left without a path (and none reaches the library as avg). */
#include <stdio.h>

#include "unit_util.h"
#include <string.h>

#include "../src/core/devpath.h"

/* --table: the matrix for docs/design.md (N native, P real pairs, D sum + divide, G gather +
 * kernel, - not a valid pair). */
static void print_table(void) {
  printf("| dtype |");
  for (int o = 0; o < GMPI_OP_COUNT; o++)
    printf(" %s |", gmpi_op_name((gmpi_op_t)o));
  printf("\n|---|");
  for (int o = 0; o < GMPI_OP_COUNT; o++)
    printf("---|");
  printf("\n");
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++) {
    printf("| %s |", gmpi_dtype_name((gmpi_dtype_t)d));
    for (int o = 0; o < GMPI_OP_COUNT; o++) {
      if (!gmpi_op_valid((gmpi_dtype_t)d, (gmpi_op_t)o)) {
        printf(" - |");
        continue;
      }
      static const char letter[] = {'N', 'P', 'D', 'G'};
      printf(" %c |", letter[gmpi_devpath_for((gmpi_dtype_t)d, (gmpi_op_t)o).kind]);
    }
    printf("\n");
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--table")) {
    print_table();
    return 0;
  }
  CHECK_EQ(gmpi_devpath_for(GMPI_FLOAT32, GMPI_SUM).kind, GMPI_DEVPATH_NATIVE);
  /* Avg is NCCL's sum then gmpi's division on every type NCCL has (never ncclAvg, which
   * scales each input before summing): the same result as the cpu backend's. */
  const gmpi_dtype_t avg_types[] = {GMPI_INT8,    GMPI_UINT8,  GMPI_INT32,   GMPI_UINT32,
                                    GMPI_INT64,   GMPI_UINT64, GMPI_FLOAT16, GMPI_BFLOAT16,
                                    GMPI_FLOAT32, GMPI_FLOAT64};
  for (size_t t = 0; t < sizeof(avg_types) / sizeof(avg_types[0]); t++) {
    gmpi_devpath_t v = gmpi_devpath_for(avg_types[t], GMPI_AVG);
    CHECK_EQ(v.kind, GMPI_DEVPATH_SUM_DIVIDE);
    CHECK_EQ(v.op, GMPI_SUM);
    CHECK_EQ(v.dtype, avg_types[t]);
    CHECK_EQ(v.count_mult, 1);
  }
  CHECK_EQ(gmpi_devpath_for(GMPI_INT16, GMPI_AVG).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_INT64, GMPI_MIN).kind, GMPI_DEVPATH_NATIVE);
  gmpi_devpath_t c = gmpi_devpath_for(GMPI_COMPLEX128, GMPI_SUM);
  CHECK_EQ(c.kind, GMPI_DEVPATH_PAIRS);
  CHECK_EQ(c.dtype, GMPI_FLOAT64);
  CHECK_EQ(c.count_mult, 2);
  gmpi_devpath_t a = gmpi_devpath_for(GMPI_INT32, GMPI_AVG);
  CHECK_EQ(a.kind, GMPI_DEVPATH_SUM_DIVIDE);
  CHECK_EQ(a.op, GMPI_SUM);
  CHECK_EQ(gmpi_devpath_for(GMPI_COMPLEX64, GMPI_PROD).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_INT16, GMPI_SUM).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_BOOL, GMPI_LOR).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_UINT32, GMPI_BXOR).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_INT8, GMPI_LAND).kind, GMPI_DEVPATH_GATHER);
  CHECK_EQ(gmpi_devpath_for(GMPI_BYTE, GMPI_BAND).kind, GMPI_DEVPATH_GATHER);
  /* Every valid pair: the library gets a dtype it has (or gmpi's kernel does the work). */
  int native = 0, gather = 0;
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++)
    for (int o = 0; o < GMPI_OP_COUNT; o++) {
      if (!gmpi_op_valid((gmpi_dtype_t)d, (gmpi_op_t)o)) continue;
      gmpi_devpath_t p = gmpi_devpath_for((gmpi_dtype_t)d, (gmpi_op_t)o);
      if (p.kind == GMPI_DEVPATH_GATHER)
        gather++;
      else {
        native++;
        CHECK_EQ(gmpi_devpath_native_dtype(p.dtype), 1);
        CHECK_EQ(p.op != GMPI_AVG, 1);
      }
    }
  CHECK_EQ(native + gather, 8 * 11 + 4 * 5 + 2 * 2 + 3 + 3);
  printf("unit_devpath: %s (%d pairs native or mapped, %d through gather + kernel)\n",
         failures ? "FAIL" : "PASS", native, gather);
  return failures ? 1 : 0;
}
