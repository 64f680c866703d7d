/* SPDX-License-Identifier: BSD-3-Clause */
/* 16-bit floats to and from float32 (round to nearest even). */
#ifndef GMPI_CORE_HALF_H
#define GMPI_CORE_HALF_H

#include <stdint.h>

float gmpi_half_to_float(uint16_t h);
uint16_t gmpi_float_to_half(float f);
float gmpi_bf16_to_float(uint16_t h);
uint16_t gmpi_float_to_bf16(float f);

#endif
