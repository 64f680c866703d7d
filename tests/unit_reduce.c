/* SPDX-License-Identifier: BSD-3-Clause */
/* Host reductions and 16-bit float conversions against hand-computed values. The device and
 * MPI paths are checked against an independent reference in the MPI tests; these kernels
 * serve 16-bit floats on MPI, so they get their own known answers here. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../src/core/half.h"
#include "../src/core/reduce.h"

static int failures;
#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    double a_ = (double)(a), b_ = (double)(b);                                                     \
    if (!(a_ == b_ || (isnan(a_) && isnan(b_)))) {                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "FAIL %s:%d: %s == %s: %.9g != %.9g\n", __FILE__, __LINE__, #a, #b, a_, b_); \
    }                                                                                              \
  } while (0)

int main(void) {
  /* float16: exact values, rounding to nearest even, overflow, subnormals, NaN. */
  CHECK_EQ(gmpi_float_to_half(1.0f), 0x3c00);
  CHECK_EQ(gmpi_float_to_half(-2.5f), 0xc100);
  CHECK_EQ(gmpi_float_to_half(65504.0f), 0x7bff);
  CHECK_EQ(gmpi_float_to_half(1e6f), 0x7c00);
  CHECK_EQ(gmpi_float_to_half(1.0f + 1.0f / 2048), 0x3c00); /* tie: to even */
  CHECK_EQ(gmpi_float_to_half(1.0f + 3.0f / 2048), 0x3c02); /* tie: to even (up) */
  CHECK_EQ(gmpi_float_to_half(5.9604645e-8f), 0x0001);      /* smallest subnormal */
  CHECK_EQ(gmpi_half_to_float(0x0001), 5.9604645e-8f);
  CHECK_EQ(gmpi_half_to_float(0x3555), 0.333251953125f);
  CHECK_EQ(gmpi_half_to_float(0xfc00), -INFINITY);
  CHECK_EQ(gmpi_half_to_float(gmpi_float_to_half(NAN)), NAN);
  /* bfloat16 */
  CHECK_EQ(gmpi_float_to_bf16(1.0f), 0x3f80);
  CHECK_EQ(gmpi_float_to_bf16(-3.0f), 0xc040);
  CHECK_EQ(gmpi_bf16_to_float(0x4049), 3.140625f);
  CHECK_EQ(gmpi_float_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* tie: to even */

  /* Reductions: a few pairs per class. */
  int8_t i8a[3] = {100, -5, 3}, i8b[3] = {100, 7, -3};
  gmpi_host_reduce(GMPI_INT8, GMPI_SUM, i8a, i8b, 3); /* wraps like MPI: 200 -> -56 */
  CHECK_EQ(i8a[0], -56);
  CHECK_EQ(i8a[1], 2);
  CHECK_EQ(i8a[2], 0);
  int32_t mn[2] = {-4, 9}, mx[2] = {3, 2};
  gmpi_host_reduce(GMPI_INT32, GMPI_MIN, mn, mx, 2);
  CHECK_EQ(mn[0], -4);
  CHECK_EQ(mn[1], 2);
  uint16_t h[2] = {gmpi_float_to_half(1.5f), gmpi_float_to_half(-2.0f)};
  uint16_t g[2] = {gmpi_float_to_half(2.25f), gmpi_float_to_half(4.0f)};
  gmpi_host_reduce(GMPI_FLOAT16, GMPI_PROD, h, g, 2);
  CHECK_EQ(gmpi_half_to_float(h[0]), 3.375f);
  CHECK_EQ(gmpi_half_to_float(h[1]), -8.0f);
  uint8_t b[3] = {0, 2, 1}, c[3] = {5, 1, 0};
  gmpi_host_reduce(GMPI_BOOL, GMPI_LXOR, b, c, 3);
  CHECK_EQ(b[0], 1);
  CHECK_EQ(b[1], 0);
  CHECK_EQ(b[2], 1);
  uint8_t x[1] = {0xf0}, y[1] = {0x3c};
  gmpi_host_reduce(GMPI_BYTE, GMPI_BXOR, x, y, 1);
  CHECK_EQ(x[0], 0xcc);
  float _Complex z[1] = {1.0f + 2.0f * _Complex_I}, w[1] = {3.0f - 1.0f * _Complex_I};
  gmpi_host_reduce(GMPI_COMPLEX64, GMPI_PROD, z, w, 1); /* (1+2i)(3-i) = 5+5i */
  CHECK_EQ(__real__ z[0], 5.0f);
  CHECK_EQ(__imag__ z[0], 5.0f);
  int64_t avg[2] = {-7, 7};
  gmpi_host_divide(GMPI_INT64, avg, 2, 2); /* C truncation: -3, 3 */
  CHECK_EQ(avg[0], -3);
  CHECK_EQ(avg[1], 3);
  /* More ranks than a narrow type holds: the divisor is never narrowed to the type (200 as an
   * int8 is -56, 256 as a uint8 is 0: a division by zero). */
  int8_t avg8[3] = {-128, 127, -100};
  gmpi_host_divide(GMPI_INT8, avg8, 3, 128); /* -1, 0, 0 */
  CHECK_EQ(avg8[0], -1);
  CHECK_EQ(avg8[1], 0);
  CHECK_EQ(avg8[2], 0);
  int8_t avg8b[2] = {127, -128};
  gmpi_host_divide(GMPI_INT8, avg8b, 2, 200);
  CHECK_EQ(avg8b[0], 0);
  CHECK_EQ(avg8b[1], 0);
  uint8_t avgu8[2] = {255, 200};
  gmpi_host_divide(GMPI_UINT8, avgu8, 2, 256);
  CHECK_EQ(avgu8[0], 0);
  CHECK_EQ(avgu8[1], 0);
  uint8_t avgu8b[1] = {255};
  gmpi_host_divide(GMPI_UINT8, avgu8b, 1, 100);
  CHECK_EQ(avgu8b[0], 2);
  int16_t avg16[2] = {32767, -32768};
  gmpi_host_divide(GMPI_INT16, avg16, 2, 40000);
  CHECK_EQ(avg16[0], 0);
  CHECK_EQ(avg16[1], 0);
  printf("unit_reduce: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
