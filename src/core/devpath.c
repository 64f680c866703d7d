/* SPDX-License-Identifier: BSD-3-Clause */
#include "devpath.h"

#include "dtype.h"

static const int native_dtype[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = 1,    [GMPI_UINT8] = 1,   [GMPI_INT32] = 1,   [GMPI_UINT32] = 1,
    [GMPI_INT64] = 1,   [GMPI_UINT64] = 1,  [GMPI_FLOAT16] = 1, [GMPI_BFLOAT16] = 1,
    [GMPI_FLOAT32] = 1, [GMPI_FLOAT64] = 1,
};
static const int native_op[GMPI_OP_COUNT] = {
    [GMPI_SUM] = 1, [GMPI_PROD] = 1, [GMPI_MIN] = 1, [GMPI_MAX] = 1, [GMPI_AVG] = 1};

static const char *const path_names[] = {[GMPI_DEVPATH_NATIVE] = "native",
                                         [GMPI_DEVPATH_PAIRS] = "real pairs",
                                         [GMPI_DEVPATH_SUM_DIVIDE] = "sum + divide",
                                         [GMPI_DEVPATH_GATHER] = "gather + kernel"};

int gmpi_devpath_native_dtype(gmpi_dtype_t dtype) {
  return gmpi_dtype_in_range(dtype) && native_dtype[dtype];
}

const char *gmpi_devpath_name(gmpi_devpath_kind_t kind) { return path_names[kind]; }

gmpi_devpath_t gmpi_devpath_for(gmpi_dtype_t dtype, gmpi_op_t op) {
  gmpi_devpath_t p = {GMPI_DEVPATH_GATHER, dtype, op, 1};
  if (op == GMPI_SUM && (dtype == GMPI_COMPLEX64 || dtype == GMPI_COMPLEX128))
    return (gmpi_devpath_t){GMPI_DEVPATH_PAIRS,
                            dtype == GMPI_COMPLEX64 ? GMPI_FLOAT32 : GMPI_FLOAT64, GMPI_SUM, 2};
  if (!native_dtype[dtype] || !native_op[op]) return p;
  /* Avg is sum / ranks on every backend: the sum rounded to the type (integers wrap), then one
   * division (C's truncation for integers; 16-bit floats divide in float32 and round once).
   * NCCL's own avg is neither: it scales each input by 1/ranks before summing (3 ranks of
   * float16 1, 2, 3 do not give 2.0), and its integer division is not documented. */
  if (op == GMPI_AVG) return (gmpi_devpath_t){GMPI_DEVPATH_SUM_DIVIDE, dtype, GMPI_SUM, 1};
  p.kind = GMPI_DEVPATH_NATIVE;
  return p;
}
