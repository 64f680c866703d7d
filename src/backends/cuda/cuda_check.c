/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA and NCCL failures as gmpi errors (the macros of cuda_check.h call these), with the
 * library's own words: NCCL's last error names what went wrong inside it. */
#include "cuda_check.h"

#include "../../core/error.h"

gmpi_status_t gmpi_cuda_error(cudaError_t e, const char *call) {
  return gmpi_error(GMPI_ERR_BACKEND, "%s failed: %s (%s)", call, cudaGetErrorString(e),
                    cudaGetErrorName(e));
}

gmpi_status_t gmpi_nccl_error(ncclResult_t r, ncclComm_t comm, const char *call) {
  const char *last = comm ? ncclGetLastError(comm) : ncclGetLastError(NULL);
  return gmpi_error(GMPI_ERR_BACKEND, "%s failed: %s%s%s", call, ncclGetErrorString(r),
                    last && last[0] ? ": " : "", last ? last : "");
}
