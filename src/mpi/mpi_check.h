/* SPDX-License-Identifier: BSD-3-Clause */
/* Converting MPI failures: each macro describes the failing MPI call once (its error string
 * in gmpi_last_error) and returns or jumps with GMPI_ERR_MPI. */
#ifndef GMPI_MPI_CHECK_H
#define GMPI_MPI_CHECK_H

#include <mpi.h>

#include "../core/error.h"

/* Describe an MPI error code as GMPI_ERR_MPI (or GMPI_ERR_TRUNCATE for MPI_ERR_TRUNCATE). */
gmpi_status_t gmpi_mpi_error(int rc, const char *call);
/* GMPI_SUCCESS for MPI_SUCCESS, else gmpi_mpi_error(rc, call). */
static inline gmpi_status_t gmpi_mpi_check(int rc, const char *call) {
  return rc == MPI_SUCCESS ? GMPI_SUCCESS : gmpi_mpi_error(rc, call);
}

#define GMPI_MPI_CHECK(call)                                                                       \
  do {                                                                                             \
    int gmpi_rc_ = (call);                                                                         \
    if (gmpi_rc_ != MPI_SUCCESS) return gmpi_mpi_error(gmpi_rc_, #call);                           \
  } while (0)

#define GMPI_MPI_CHECK_GOTO(call, st, label)                                                       \
  do {                                                                                             \
    int gmpi_rc_ = (call);                                                                         \
    if (gmpi_rc_ != MPI_SUCCESS) {                                                                 \
      (st) = gmpi_mpi_error(gmpi_rc_, #call);                                                      \
      goto label;                                                                                  \
    }                                                                                              \
  } while (0)

#endif
