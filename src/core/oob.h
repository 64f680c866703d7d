/* The out-of-band channel between the ranks of a comm: small collective exchanges for
 * bootstrap, cross-rank checks and plan compilation. Implemented over MPI in src/mpi/oob.c;
 * core sees only these calls. All are bounded by GMPI_TIMEOUT. */
#ifndef GMPI_CORE_OOB_H
#define GMPI_CORE_OOB_H

#include <stddef.h>

#include "gmpi.h"

gmpi_status_t gmpi_oob_allgather(gmpi_comm_t comm, const void *mine, void *all, size_t bytes);
gmpi_status_t gmpi_oob_bcast(gmpi_comm_t comm, void *buf, size_t bytes, int root);
/* Variable-size allgather: each rank gives `bytes`, gets everyone's sizes and data in one
 * malloc'd block (*all, free it), with offsets[size+1]. */
gmpi_status_t gmpi_oob_allgatherv(gmpi_comm_t comm, const void *mine, size_t bytes, void **all,
                                  size_t **offsets);

#endif
