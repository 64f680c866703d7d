/* SPDX-License-Identifier: BSD-3-Clause */
/* Packing a plan's fused runs (cuda_plan.c): one kernel launch copies the inputs of every
 * collective of a run into the run's packed buffer, one copies the result out to every output.
 * Plain C, also compiled into cuda_kernels.cu. */
#ifndef GMPI_CUDA_PACK_H
#define GMPI_CUDA_PACK_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One collective of a packed run (core's gmpi_plan_slice_t, plan_fuse.h). */
typedef struct {
  const void *in; /* read when packing; NULL: this slice packs nothing */
  void *out;      /* written when unpacking; NULL: this slice unpacks nothing */
  size_t offset;  /* where it starts in a row of the packed buffer, in bytes */
  size_t bytes;
} gmpi_cuda_slice_t;

/* The rows of the packed buffer one launch copies (core's gmpi_plan_rows_t, one direction):
 * rows from row, row_bytes each; where rows > 1 a slice's row k is at in (out) + k x bytes. */
typedef struct {
  size_t row_bytes;
  int rows, row;
} gmpi_cuda_rows_t;

/* The most slices (the grid's y) and rows (its z) one launch copies. */
#define GMPI_CUDA_PACK_MAX_SLICES 65535
#define GMPI_CUDA_PACK_MAX_ROWS   65535

/* One launch on stream: for each of the n slices (a device array) and each row, copy in to the
 * packed buffer (unpack 0), or from it to out (unpack 1), skipping slices with no in (out).
 * largest: the largest copying slice's bytes (it sizes the grid). */
cudaError_t gmpi_cuda_pack(const gmpi_cuda_slice_t *slices, int n, gmpi_cuda_rows_t rows,
                           size_t largest, void *packed, int unpack, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
