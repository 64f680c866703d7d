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

/* Every communicator is blocking: anything but ncclSuccess is an error. */
#define GMPI_NCCL_CHECK(call, comm)                                                                \
  do {                                                                                             \
    ncclResult_t gmpi_nr_ = (call);                                                                \
    if (gmpi_nr_ != ncclSuccess) return gmpi_nccl_error(gmpi_nr_, (comm), #call);                  \
  } while (0)

#define GMPI_NCCL_CHECK_GOTO(call, comm, st, label)                                                \
  do {                                                                                             \
    ncclResult_t gmpi_nr_ = (call);                                                                \
    if (gmpi_nr_ != ncclSuccess) {                                                                 \
      (st) = gmpi_nccl_error(gmpi_nr_, (comm), #call);                                             \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

/* A data-path call on the comm's blocking NCCL communicator (cuda_wait.c): watched while inside
 * NCCL, so that a call stuck there ends the job within GMPI_TIMEOUT; nc names the
 * communicator in the error. */
void cuda_nccl_enter(gmpi_comm_t comm, const char *call);
void cuda_nccl_exit(gmpi_comm_t comm);
gmpi_status_t cuda_nccl_failed(gmpi_comm_t comm, ncclComm_t nc, ncclResult_t r, const char *call);
#define GMPI_NCCL_ENQUEUE(comm, nc, call)                                                          \
  do {                                                                                             \
    cuda_nccl_enter((comm), #call);                                                                \
    ncclResult_t gmpi_nr_ = (call);                                                                \
    cuda_nccl_exit(comm);                                                                          \
    if (gmpi_nr_ != ncclSuccess) return cuda_nccl_failed((comm), (nc), gmpi_nr_, #call);           \
  } while (0)

#endif
