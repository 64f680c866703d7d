/* SPDX-License-Identifier: BSD-3-Clause */
/* How a device reduction library with NCCL's repertoire runs each valid (dtype, op).
 * NCCL reduces int8/uint8/int32/uint32/int64/uint64/float16/bfloat16/float32/float64 with
 * sum/prod/min/max/avg; everything else must still be right on device buffers. Backend-
 * independent on purpose: tests/unit_devpath.c checks the table on any machine (docs/design.md
 * lists it). */
#ifndef GMPI_CORE_DEVPATH_H
#define GMPI_CORE_DEVPATH_H

#include <stddef.h>

#include "gmpi.h"

typedef enum {
  GMPI_DEVPATH_NATIVE = 0, /* the library's own type and op */
  GMPI_DEVPATH_PAIRS,      /* complex sum: twice as many real elements, summed natively */
  GMPI_DEVPATH_SUM_DIVIDE, /* avg: native sum, then gmpi's division (as the cpu backend's) */
  GMPI_DEVPATH_GATHER      /* gather every rank's input, reduce with gmpi's own kernel */
} gmpi_devpath_kind_t;

typedef struct {
  gmpi_devpath_kind_t kind;
  gmpi_dtype_t dtype; /* what the library is handed (complex64 -> float32 pairs) */
  gmpi_op_t op;       /* what the library is handed (avg -> sum) */
  size_t count_mult;  /* 2 for pairs, else 1 */
} gmpi_devpath_t;

/* Whether the device library has this dtype at all (data movement works on any dtype). */
int gmpi_devpath_native_dtype(gmpi_dtype_t dtype);
/* The path of a valid (dtype, op) pair. */
gmpi_devpath_t gmpi_devpath_for(gmpi_dtype_t dtype, gmpi_op_t op);
const char *gmpi_devpath_name(gmpi_devpath_kind_t kind);

#endif
