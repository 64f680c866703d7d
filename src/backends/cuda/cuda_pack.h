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

/* One copy of a packed run (core's gmpi_plan_slice_t, plan_fuse.h). */
typedef struct {
  const void *in; /* read when packing; NULL: this slice packs nothing */
  void *out;      /* written when unpacking; NULL: this slice unpacks nothing */
  size_t offset;  /* where it starts in the packed buffer, in bytes (a multiple of its dtype) */
  size_t bytes;
} gmpi_cuda_slice_t;

/* The most slices one launch copies (the grid's y dimension). */
#define GMPI_CUDA_PACK_MAX_SLICES 65535

/* One launch on stream: for each of the n slices (a device array, n <= GMPI_CUDA_PACK_MAX_SLICES)
 * copy in to packed + offset (unpack 0), or packed + offset to out (unpack 1), skipping those
 * with no in (out). largest: the largest copying slice's bytes (it sizes the grid). */
cudaError_t gmpi_cuda_pack(const gmpi_cuda_slice_t *slices, int n, size_t largest, void *packed,
                           int unpack, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
