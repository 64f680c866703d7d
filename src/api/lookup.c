/* SPDX-License-Identifier: BSD-3-Clause */
/* Lookup by name, for bindings that would rather not hard-code enum values. */
#include <string.h>

#include "../core/comm.h"
#include "../core/error.h"

static const char *dtype_name_at(int i) { return gmpi_dtype_name((gmpi_dtype_t)i); }
static const char *op_name_at(int i) { return gmpi_op_name((gmpi_op_t)i); }

/* The index in [0, count) whose name_at is name; the error names what (and examples). */
static gmpi_status_t find_name(const char *name, int count, const char *(*name_at)(int),
                               const char *what, int *index) {
  if (!name) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'name' is NULL");
  for (int i = 0; i < count; i++) {
    if (strcmp(name, name_at(i)) == 0) {
      *index = i;
      return GMPI_SUCCESS;
    }
  }
  return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'name' = \"%.64s\" is no %s", name, what);
}

gmpi_status_t gmpi_dtype_from_name(const char *name, gmpi_dtype_t *dtype) {
  gmpi_call_begin_nocomm(__func__);
  if (!dtype) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'dtype' is NULL");
  int index = 0;
  gmpi_status_t st = find_name(name, GMPI_DTYPE_COUNT, dtype_name_at,
                               "dtype (float32, int64, bfloat16, ...)", &index);
  if (st == GMPI_SUCCESS) *dtype = (gmpi_dtype_t)index;
  return st;
}

gmpi_status_t gmpi_op_from_name(const char *name, gmpi_op_t *op) {
  gmpi_call_begin_nocomm(__func__);
  if (!op) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'op' is NULL");
  int index = 0;
  gmpi_status_t st = find_name(name, GMPI_OP_COUNT, op_name_at,
                               "op (sum, prod, min, max, avg, band, ...)", &index);
  if (st == GMPI_SUCCESS) *op = (gmpi_op_t)index;
  return st;
}
