/* SPDX-License-Identifier: BSD-3-Clause */
/* Converting CUDA and NCCL failures: each macro describes the failing call once (with the
 * library's own error text) as GMPI_ERR_BACKEND, and returns or jumps. */
#ifndef GMPI_CUDA_CHECK_H
#define GMPI_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <nccl.h>

#include "../../core/error.h"

gmpi_status_t gmpi_cuda_error(cudaError_t e, const char *call);
gmpi_status_t gmpi_nccl_error(ncclResult_t r, ncclComm_t comm, const char *call);

#define GMPI_CUDA_CHECK(call)                                                                      \
  do {                                                                                             \
    cudaError_t gmpi_ce_ = (call);                                                                 \
    if (gmpi_ce_ != cudaSuccess) return gmpi_cuda_error(gmpi_ce_, #call);                          \
  } while (0)

#define GMPI_CUDA_CHECK_GOTO(call, st, label)                                                      \
  do {                                                                                             \
    cudaError_t gmpi_ce_ = (call);                                                                 \
    if (gmpi_ce_ != cudaSuccess) {                                                                 \
      (st) = gmpi_cuda_error(gmpi_ce_, #call);                                                     \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

/* ncclInProgress is success for nonblocking communicators: completion is polled later. */
#define GMPI_NCCL_CHECK(call, comm)                                                                \
  do {                                                                                             \
    ncclResult_t gmpi_nr_ = (call);                                                                \
    if (gmpi_nr_ != ncclSuccess && gmpi_nr_ != ncclInProgress)                                     \
      return gmpi_nccl_error(gmpi_nr_, (comm), #call);                                             \
  } while (0)

#define GMPI_NCCL_CHECK_GOTO(call, comm, st, label)                                                \
  do {                                                                                             \
    ncclResult_t gmpi_nr_ = (call);                                                                \
    if (gmpi_nr_ != ncclSuccess && gmpi_nr_ != ncclInProgress) {                                   \
      (st) = gmpi_nccl_error(gmpi_nr_, (comm), #call);                                             \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

/* Call NCCL on a nonblocking communicator and wait (bounded, progressing MPI) until the call is
 * really enqueued: ncclInProgress means NCCL is still enqueuing in the background, and any
 * stream work issued before it settles would run in the wrong order. */
gmpi_status_t cuda_nccl_settle(gmpi_comm_t comm, ncclComm_t nc, ncclResult_t r, const char *call);
#define GMPI_NCCL_ENQUEUE(comm, nc, call) GMPI_CHECK(cuda_nccl_settle((comm), (nc), (call), #call))

#endif
