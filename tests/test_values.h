/* SPDX-License-Identifier: BSD-3-Clause */
/* Test values for every dtype: inputs that make every valid (dtype, op) result exact, an
 * independent reference fold in double/integer arithmetic, and load/store per dtype. Inputs
 * repeat with period T_PERIOD, so a long expected buffer is a tiling of one period. */
#ifndef GMPI_TEST_VALUES_H
#define GMPI_TEST_VALUES_H

#include <complex.h>
#include <stdint.h>

#include "test_util.h"

/* gmpi's conversions (src/core/half.c, linked into the tests as gmpi_half; not in gmpi.h). */
float gmpi_half_to_float(uint16_t h);
uint16_t gmpi_float_to_half(float f);
float gmpi_bf16_to_float(uint16_t h);
uint16_t gmpi_float_to_bf16(float f);

#define T_PERIOD 180

typedef struct {
  double re, im;
} t_num;

static inline int t_is_int(gmpi_dtype_t d) { return d <= GMPI_UINT64; }
static inline int t_is_signed(gmpi_dtype_t d) {
  return d == GMPI_INT8 || d == GMPI_INT16 || d == GMPI_INT32 || d == GMPI_INT64;
}
static inline int t_is_float(gmpi_dtype_t d) { return d >= GMPI_FLOAT16 && d <= GMPI_FLOAT64; }
static inline int t_is_complex(gmpi_dtype_t d) {
  return d == GMPI_COMPLEX64 || d == GMPI_COMPLEX128;
}

static inline void t_store(gmpi_dtype_t d, void *buf, size_t i, t_num v) {
  long long iv = (long long)v.re;
  switch (d) {
  case GMPI_INT8: ((int8_t *)buf)[i] = (int8_t)iv; break;
  case GMPI_UINT8: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
  case GMPI_INT16: ((int16_t *)buf)[i] = (int16_t)iv; break;
  case GMPI_UINT16: ((uint16_t *)buf)[i] = (uint16_t)iv; break;
  case GMPI_INT32: ((int32_t *)buf)[i] = (int32_t)iv; break;
  case GMPI_UINT32: ((uint32_t *)buf)[i] = (uint32_t)iv; break;
  case GMPI_INT64: ((int64_t *)buf)[i] = (int64_t)iv; break;
  case GMPI_UINT64: ((uint64_t *)buf)[i] = (uint64_t)iv; break;
  case GMPI_FLOAT16: ((uint16_t *)buf)[i] = gmpi_float_to_half((float)v.re); break;
  case GMPI_BFLOAT16: ((uint16_t *)buf)[i] = gmpi_float_to_bf16((float)v.re); break;
  case GMPI_FLOAT32: ((float *)buf)[i] = (float)v.re; break;
  case GMPI_FLOAT64: ((double *)buf)[i] = v.re; break;
  case GMPI_COMPLEX64: ((float complex *)buf)[i] = (float)v.re + (float)v.im * I; break;
  case GMPI_COMPLEX128: ((double complex *)buf)[i] = v.re + v.im * I; break;
  case GMPI_BOOL:
  case GMPI_BYTE: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
  default: break;
  }
}

static inline t_num t_load(gmpi_dtype_t d, const void *buf, size_t i) {
  switch (d) {
  case GMPI_INT8: return (t_num){((const int8_t *)buf)[i], 0};
  case GMPI_UINT8: return (t_num){((const uint8_t *)buf)[i], 0};
  case GMPI_INT16: return (t_num){((const int16_t *)buf)[i], 0};
  case GMPI_UINT16: return (t_num){((const uint16_t *)buf)[i], 0};
  case GMPI_INT32: return (t_num){((const int32_t *)buf)[i], 0};
  case GMPI_UINT32: return (t_num){((const uint32_t *)buf)[i], 0};
  case GMPI_INT64: return (t_num){(double)((const int64_t *)buf)[i], 0};
  case GMPI_UINT64: return (t_num){(double)((const uint64_t *)buf)[i], 0};
  case GMPI_FLOAT16: return (t_num){gmpi_half_to_float(((const uint16_t *)buf)[i]), 0};
  case GMPI_BFLOAT16: return (t_num){gmpi_bf16_to_float(((const uint16_t *)buf)[i]), 0};
  case GMPI_FLOAT32: return (t_num){((const float *)buf)[i], 0};
  case GMPI_FLOAT64: return (t_num){((const double *)buf)[i], 0};
  case GMPI_COMPLEX64: {
    float complex z = ((const float complex *)buf)[i];
    return (t_num){crealf(z), cimagf(z)};
  }
  case GMPI_COMPLEX128: {
    double complex z = ((const double complex *)buf)[i];
    return (t_num){creal(z), cimag(z)};
  }
  default: return (t_num){((const uint8_t *)buf)[i], 0};
  }
}

/* Rank r's input at element i for a reduction with op (any op for data movement tests). */
static inline t_num t_input(gmpi_dtype_t d, gmpi_op_t op, int r, size_t i) {
  size_t k = i % T_PERIOD;
  switch (op) {
  case GMPI_BAND:
  case GMPI_BOR:
  case GMPI_BXOR: return (t_num){(double)(((size_t)r * 37 + (k % 60) * 11 + 5) & 0x7f), 0};
  case GMPI_LAND:
  case GMPI_LOR:
  case GMPI_LXOR: return (t_num){(double)(((size_t)r + k) % 3), 0}; /* 2 is "true" too */
  case GMPI_PROD: return (t_num){1.0 + (((size_t)r + k) % 4 == 0), t_is_complex(d) ? (k % 2) : 0};
  default: break;
  }
  double v = (double)(((size_t)r * 3 + k) % 9);
  if (t_is_signed(d) || t_is_float(d) || t_is_complex(d)) v -= 4;
  if (t_is_float(d) || t_is_complex(d)) v += 0.5;
  return (t_num){v, t_is_complex(d) ? (double)(((size_t)r + 2 * k) % 5) - 2 : 0};
}

static inline t_num t_fold(gmpi_op_t op, t_num a, t_num b) {
  unsigned long long x = (unsigned long long)a.re, y = (unsigned long long)b.re;
  switch (op) {
  case GMPI_SUM:
  case GMPI_AVG: return (t_num){a.re + b.re, a.im + b.im};
  case GMPI_PROD: return (t_num){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  case GMPI_MIN: return a.re < b.re ? a : b;
  case GMPI_MAX: return a.re > b.re ? a : b;
  case GMPI_BAND: return (t_num){(double)(x & y), 0};
  case GMPI_BOR: return (t_num){(double)(x | y), 0};
  case GMPI_BXOR: return (t_num){(double)(x ^ y), 0};
  case GMPI_LAND: return (t_num){(double)(a.re != 0 && b.re != 0), 0};
  case GMPI_LOR: return (t_num){(double)(a.re != 0 || b.re != 0), 0};
  case GMPI_LXOR: return (t_num){(double)((a.re != 0) != (b.re != 0)), 0};
  default: return a;
  }
}

/* The reduction of all ranks' inputs at element i, as MPI defines it. */
static inline t_num t_reduced(gmpi_dtype_t d, gmpi_op_t op, int nranks, size_t i) {
  t_num acc = t_input(d, op, 0, i);
  for (int r = 1; r < nranks; r++)
    acc = t_fold(op, acc, t_input(d, op, r, i));
  if (op == GMPI_AVG) {
    if (t_is_int(d))
      acc.re = (double)((long long)acc.re / nranks); /* C truncation */
    else
      acc.re /= nranks;
  }
  return acc;
}

/* Fill buf[0..n) by tiling one period of f(i). */
#define T_TILE(d, buf, n, expr_of_i)                                                               \
  do {                                                                                             \
    size_t es_ = gmpi_dtype_size(d), n_ = (n), head_ = n_ < T_PERIOD ? n_ : T_PERIOD;              \
    for (size_t i = 0; i < head_; i++)                                                             \
      t_store((d), (buf), i, (expr_of_i));                                                         \
    for (size_t done_ = head_; done_ < n_;) {                                                      \
      size_t c_ = done_ < n_ - done_ ? done_ : n_ - done_;                                         \
      memcpy((char *)(buf) + done_ * es_, (buf), c_ * es_);                                        \
      done_ += c_;                                                                                 \
    }                                                                                              \
  } while (0)

/* Compare n elements; report the first difference with both values. Returns 1 when equal. */
static inline int t_check_buffer(const char *what, gmpi_dtype_t d, const void *got,
                                 const void *want, size_t n) {
  size_t es = gmpi_dtype_size(d);
  if (n == 0 || !memcmp(got, want, n * es)) return 1;
  for (size_t i = 0; i < n; i++) {
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
      t_num g = t_load(d, got, i), w = t_load(d, want, i);
      T_FAIL_("%s: %s element %zu of %zu: got (%g, %g), want (%g, %g)", what, gmpi_dtype_name(d), i,
              n, g.re, g.im, w.re, w.im);
      break;
    }
  }
  return 0;
}

#endif
