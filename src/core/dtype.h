/* SPDX-License-Identifier: BSD-3-Clause */
/* Datatype and reduction-op tables: one row per dtype, one per op, designated initializers. */
#ifndef GMPI_CORE_DTYPE_H
#define GMPI_CORE_DTYPE_H

#include <stddef.h>

#include "gmpi.h"

/* Classes decide which ops a dtype accepts (MPI's rules, AVG added). */
enum {
  GMPI_CLASS_INT = 1u << 0,
  GMPI_CLASS_FLOAT = 1u << 1,
  GMPI_CLASS_COMPLEX = 1u << 2,
  GMPI_CLASS_BOOL = 1u << 3,
  GMPI_CLASS_BYTE = 1u << 4
};

typedef struct {
  const char *name; /* "float32" */
  size_t size;      /* bytes per element */
  unsigned cls;     /* one GMPI_CLASS_* bit */
} gmpi_dtype_info_t;

typedef struct {
  const char *name; /* "sum" */
  unsigned classes; /* GMPI_CLASS_* bits it accepts */
} gmpi_op_info_t;

extern const gmpi_dtype_info_t gmpi_dtype_table[GMPI_DTYPE_COUNT];
extern const gmpi_op_info_t gmpi_op_table[GMPI_OP_COUNT];

static inline int gmpi_dtype_in_range(gmpi_dtype_t d) {
  return (unsigned)d < (unsigned)GMPI_DTYPE_COUNT;
}
static inline int gmpi_op_in_range(gmpi_op_t o) { return (unsigned)o < (unsigned)GMPI_OP_COUNT; }
/* gmpi_op_valid inlined: does op apply to dtype? Every reduction asks. */
static inline int gmpi_op_applies(gmpi_dtype_t dtype, gmpi_op_t op) {
  if (!gmpi_dtype_in_range(dtype) || !gmpi_op_in_range(op)) return 0;
  return (gmpi_op_table[op].classes & gmpi_dtype_table[dtype].cls) != 0;
}
/* gmpi_dtype_size inlined, for the library's per-call paths (a call into the exported symbol
 * costs more than the lookup): bytes per element, 0 for a dtype out of range. */
static inline size_t gmpi_dtype_elem_size(gmpi_dtype_t d) {
  return gmpi_dtype_in_range(d) ? gmpi_dtype_table[d].size : 0;
}

#endif
