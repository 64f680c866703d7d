/* Lookup by name, for bindings that would rather not hard-code enum values. */
#include <string.h>

#include "../core/comm.h"
#include "../core/error.h"

gmpi_status_t gmpi_dtype_from_name(const char *name, gmpi_dtype_t *dtype) {
  gmpi_call_begin_nocomm(__func__);
  if (!name) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'name' is NULL");
  if (!dtype) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'dtype' is NULL");
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++) {
    if (strcmp(name, gmpi_dtype_name((gmpi_dtype_t)d)) == 0) {
      *dtype = (gmpi_dtype_t)d;
      return GMPI_SUCCESS;
    }
  }
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument 'name' = \"%.64s\" is no dtype (float32, int64, bfloat16, ...)",
                    name);
}

gmpi_status_t gmpi_op_from_name(const char *name, gmpi_op_t *op) {
  gmpi_call_begin_nocomm(__func__);
  if (!name) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'name' is NULL");
  if (!op) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'op' is NULL");
  for (int o = 0; o < GMPI_OP_COUNT; o++) {
    if (strcmp(name, gmpi_op_name((gmpi_op_t)o)) == 0) {
      *op = (gmpi_op_t)o;
      return GMPI_SUCCESS;
    }
  }
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument 'name' = \"%.64s\" is no op (sum, prod, min, max, avg, band, ...)",
                    name);
}
