/* SPDX-License-Identifier: BSD-3-Clause */
#include "reduce.h"

#include <complex.h>
#include <math.h>
#include <string.h>

#include "dtype.h"
#include "half.h"

typedef void (*reduce_fn_t)(void *inout, const void *in, size_t n);
typedef void (*divide_fn_t)(void *buf, size_t n, int divisor);

/* ---- generated element loops ---------------------------------------------------------
 * LOAD/STORE let 16-bit floats compute in float32; W is the type the expression runs in
 * (unsigned for integers, so that sums and products wrap as MPI's do, without C's UB). */
#define PLAIN_LOAD(v)  (v)
#define PLAIN_STORE(v) (v)
#define HALF_LOAD(v)   gmpi_half_to_float(v)
#define HALF_STORE(v)  gmpi_float_to_half(v)
#define BF16_LOAD(v)   gmpi_bf16_to_float(v)
#define BF16_STORE(v)  gmpi_float_to_bf16(v)

#define REDUCE_FN(tn, T, W, LOAD, STORE, on, EXPR)                                                 \
  static void reduce_##tn##_##on(void *io, const void *in, size_t n) {                             \
    T *a = io;                                                                                     \
    const T *b = in;                                                                               \
    for (size_t i = 0; i < n; i++) {                                                               \
      W x = (W)LOAD(a[i]), y = (W)LOAD(b[i]);                                                      \
      a[i] = (T)STORE(EXPR);                                                                       \
    }                                                                                              \
  }

/* The divisor stays an int (promoted, never narrowed): (W)d would wrap 128 ranks to -128 for
 * int8 and 256 to 0 for uint8. */
#define DIVIDE_FN(tn, T, W, LOAD, STORE)                                                           \
  static void divide_##tn(void *buf, size_t n, int d) {                                            \
    T *a = buf;                                                                                    \
    for (size_t i = 0; i < n; i++)                                                                 \
      a[i] = (T)STORE((W)((W)LOAD(a[i]) / d));                                                     \
  }

#define ARITH_FNS(tn, T, W, L, S)                                                                  \
  REDUCE_FN(tn, T, W, L, S, sum, x + y) REDUCE_FN(tn, T, W, L, S, prod, x *y)
#define ORDER_FNS(tn, T, W, L, S)                                                                  \
  REDUCE_FN(tn, T, W, L, S, min, (x < y ? x : y)) REDUCE_FN(tn, T, W, L, S, max, (x > y ? x : y))
#define BIT_FNS(tn, T, W)                                                                          \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, band, x &y)                                         \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, bor, x | y)                                         \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, bxor, x ^ y)
#define LOGIC_FNS(tn, T, W)                                                                        \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, land, (x && y))                                     \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, lor, (x || y))                                      \
  REDUCE_FN(tn, T, W, PLAIN_LOAD, PLAIN_STORE, lxor, (!x != !y))

/* Integers: every op. Comparisons need the signed type, arithmetic the unsigned one. */
#define INT_FNS(tn, T, U)                                                                          \
  ARITH_FNS(tn, T, U, PLAIN_LOAD, PLAIN_STORE)                                                     \
  ORDER_FNS(tn, T, T, PLAIN_LOAD, PLAIN_STORE)                                                     \
  BIT_FNS(tn, T, U) LOGIC_FNS(tn, T, T) DIVIDE_FN(tn, T, T, PLAIN_LOAD, PLAIN_STORE)
#define FLOAT_FNS(tn, T, W, L, S)                                                                  \
  ARITH_FNS(tn, T, W, L, S) ORDER_FNS(tn, T, W, L, S) DIVIDE_FN(tn, T, W, L, S)

INT_FNS(i8, int8_t, uint8_t)
INT_FNS(u8, uint8_t, uint8_t)
INT_FNS(i16, int16_t, uint16_t)
INT_FNS(u16, uint16_t, uint16_t)
INT_FNS(i32, int32_t, uint32_t)
INT_FNS(u32, uint32_t, uint32_t)
INT_FNS(i64, int64_t, uint64_t)
INT_FNS(u64, uint64_t, uint64_t)
FLOAT_FNS(f16, uint16_t, float, HALF_LOAD, HALF_STORE)
FLOAT_FNS(bf16, uint16_t, float, BF16_LOAD, BF16_STORE)
FLOAT_FNS(f32, float, float, PLAIN_LOAD, PLAIN_STORE)
FLOAT_FNS(f64, double, double, PLAIN_LOAD, PLAIN_STORE)
ARITH_FNS(c64, float complex, float complex, PLAIN_LOAD, PLAIN_STORE)
ARITH_FNS(c128, double complex, double complex, PLAIN_LOAD, PLAIN_STORE)
LOGIC_FNS(bool, uint8_t, uint8_t)
BIT_FNS(byte, uint8_t, uint8_t)

#define INT_ROW(tn)                                                                                \
  {                                                                                                \
    [GMPI_SUM] = reduce_##tn##_sum, [GMPI_PROD] = reduce_##tn##_prod,                              \
    [GMPI_MIN] = reduce_##tn##_min, [GMPI_MAX] = reduce_##tn##_max,                                \
    [GMPI_AVG] = reduce_##tn##_sum, [GMPI_BAND] = reduce_##tn##_band,                              \
    [GMPI_BOR] = reduce_##tn##_bor, [GMPI_BXOR] = reduce_##tn##_bxor,                              \
    [GMPI_LAND] = reduce_##tn##_land, [GMPI_LOR] = reduce_##tn##_lor,                              \
    [GMPI_LXOR] = reduce_##tn##_lxor                                                               \
  }
#define FLOAT_ROW(tn)                                                                              \
  {                                                                                                \
    [GMPI_SUM] = reduce_##tn##_sum, [GMPI_PROD] = reduce_##tn##_prod,                              \
    [GMPI_MIN] = reduce_##tn##_min, [GMPI_MAX] = reduce_##tn##_max, [GMPI_AVG] = reduce_##tn##_sum \
  }

static const reduce_fn_t reduce_table[GMPI_DTYPE_COUNT][GMPI_OP_COUNT] = {
    [GMPI_INT8] = INT_ROW(i8),
    [GMPI_UINT8] = INT_ROW(u8),
    [GMPI_INT16] = INT_ROW(i16),
    [GMPI_UINT16] = INT_ROW(u16),
    [GMPI_INT32] = INT_ROW(i32),
    [GMPI_UINT32] = INT_ROW(u32),
    [GMPI_INT64] = INT_ROW(i64),
    [GMPI_UINT64] = INT_ROW(u64),
    [GMPI_FLOAT16] = FLOAT_ROW(f16),
    [GMPI_BFLOAT16] = FLOAT_ROW(bf16),
    [GMPI_FLOAT32] = FLOAT_ROW(f32),
    [GMPI_FLOAT64] = FLOAT_ROW(f64),
    [GMPI_COMPLEX64] = {[GMPI_SUM] = reduce_c64_sum, [GMPI_PROD] = reduce_c64_prod},
    [GMPI_COMPLEX128] = {[GMPI_SUM] = reduce_c128_sum, [GMPI_PROD] = reduce_c128_prod},
    [GMPI_BOOL] = {[GMPI_LAND] = reduce_bool_land,
                   [GMPI_LOR] = reduce_bool_lor,
                   [GMPI_LXOR] = reduce_bool_lxor},
    [GMPI_BYTE] = {[GMPI_BAND] = reduce_byte_band,
                   [GMPI_BOR] = reduce_byte_bor,
                   [GMPI_BXOR] = reduce_byte_bxor},
};

static const divide_fn_t divide_table[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = divide_i8,       [GMPI_UINT8] = divide_u8,    [GMPI_INT16] = divide_i16,
    [GMPI_UINT16] = divide_u16,    [GMPI_INT32] = divide_i32,   [GMPI_UINT32] = divide_u32,
    [GMPI_INT64] = divide_i64,     [GMPI_UINT64] = divide_u64,  [GMPI_FLOAT16] = divide_f16,
    [GMPI_BFLOAT16] = divide_bf16, [GMPI_FLOAT32] = divide_f32, [GMPI_FLOAT64] = divide_f64,
};

void gmpi_host_reduce(gmpi_dtype_t dtype, gmpi_op_t op, void *inout, const void *in, size_t n) {
  if (!gmpi_op_applies(dtype, op) || n == 0) return;
  reduce_table[dtype][op](inout, in, n);
}

void gmpi_host_divide(gmpi_dtype_t dtype, void *buf, size_t n, int divisor) {
  if (!gmpi_dtype_in_range(dtype) || !divide_table[dtype] || n == 0 || divisor == 1) return;
  divide_table[dtype](buf, n, divisor);
}
