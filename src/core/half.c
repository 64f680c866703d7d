/* SPDX-License-Identifier: BSD-3-Clause */
/* 16-bit floats (IEEE half, bfloat16) to and from float32, rounding to nearest even. A file of
 * its own: the tests and gmpi-bench link it to build and check their values. */
#include "half.h"

#include <math.h>
#include <string.h>

float gmpi_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float f = ldexpf((float)mant, -24); /* zero or subnormal */
    return sign ? -f : f;
  }
  uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                         : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  float f;
  memcpy(&f, &x, sizeof(f));
  return f;
}

static uint32_t round_shift(uint32_t value, unsigned shift) {
  uint32_t kept = value >> shift, rest = value & ((1u << shift) - 1), half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1u)));
}

uint16_t gmpi_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    return (uint16_t)(sign | round_shift(mant | 0x800000u, (unsigned)(14 - e)));
  }
  /* A carry out of the mantissa correctly bumps the exponent (up to infinity). */
  return (uint16_t)(sign | round_shift(((uint32_t)e << 23) | mant, 13));
}

float gmpi_bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof(f));
  return f;
}

uint16_t gmpi_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
