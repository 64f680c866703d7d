/* SPDX-License-Identifier: BSD-3-Clause */
/* Host reductions, used where MPI has no built-in op (float16, bfloat16), for AVG's final
 * division, and by tests as the reference. */
#ifndef GMPI_CORE_REDUCE_H
#define GMPI_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"

/* inout[i] = inout[i] op in[i]. (dtype, op) must be valid; AVG reduces as SUM. */
void gmpi_host_reduce(gmpi_dtype_t dtype, gmpi_op_t op, void *inout, const void *in, size_t n);
/* buf[i] /= divisor: AVG's last step (C's truncating division for integers). */
void gmpi_host_divide(gmpi_dtype_t dtype, void *buf, size_t n, int divisor);

#endif
