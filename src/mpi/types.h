/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi dtypes and ops as MPI sees them, and MPI types for byte counts beyond INT_MAX. */
#ifndef GMPI_MPI_TYPES_H
#define GMPI_MPI_TYPES_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>

#include "gmpi.h"

/* The MPI datatype carrying dtype (16-bit floats travel as MPI_UINT16_T). Inline, as the next:
 * every host reduction asks both, and a call each was a tenth of what gmpi adds to a small one. */
extern const MPI_Datatype gmpi_mpi_dtype_map[GMPI_DTYPE_COUNT];
static inline MPI_Datatype gmpi_mpi_dtype(gmpi_dtype_t dtype) { return gmpi_mpi_dtype_map[dtype]; }
/* The MPI op reducing (dtype, op): built-in where MPI has one that is right, gmpi's own for
 * 16-bit floats and for 8/16-bit integer sums and products (which must wrap).
 * AVG maps to SUM (the caller divides). (dtype, op) must be valid, and a comm live (the map is
 * filled by gmpi_mpi_ops_acquire). */
extern MPI_Op gmpi_mpi_op_map[GMPI_DTYPE_COUNT][GMPI_OP_COUNT];
static inline MPI_Op gmpi_mpi_op(gmpi_dtype_t dtype, gmpi_op_t op) {
  return gmpi_mpi_op_map[dtype][op];
}
/* Create / free gmpi's own MPI ops (reference counted by live comms). */
gmpi_status_t gmpi_mpi_ops_acquire(void);
void gmpi_mpi_ops_release(void);

/* The type made for a message beyond one count (gmpi_mpi_bytes_type calls it). */
gmpi_status_t gmpi_mpi_bytes_type_made(size_t bytes, size_t limit, MPI_Datatype *type, int *count);
/* A (type, count) that moves exactly `bytes` bytes; one message even beyond INT_MAX. limit is
 * the largest count one MPI call gets. The type's extent is `bytes`, so it can describe one
 * block of an allgather or alltoall. Release with gmpi_mpi_type_release. Inline: every message
 * asks, and almost every one fits one count of MPI_BYTE. */
static inline gmpi_status_t gmpi_mpi_bytes_type(size_t bytes, size_t limit, MPI_Datatype *type,
                                                int *count) {
  if (bytes <= limit && bytes <= INT_MAX) {
    *type = MPI_BYTE;
    *count = (int)bytes;
    return GMPI_SUCCESS;
  }
  return gmpi_mpi_bytes_type_made(bytes, limit, type, count);
}
static inline void gmpi_mpi_type_release(MPI_Datatype *type) {
  if (*type != MPI_BYTE && *type != MPI_DATATYPE_NULL) PMPI_Type_free(type);
  *type = MPI_DATATYPE_NULL;
}

/* The bytes a completed receive posted as MPI_BYTE got, from its status: 1, or 0 where MPI
 * cannot say (over INT_MAX bytes, for MPI_Get_count). Open MPI 4 and 5 keep the count in the
 * status itself (_ucount, bytes), and gmpi is built against the mpi.h of the MPI it runs on, so
 * it is read there: MPI_Get_count's checks were a tenth of a small receive's cost in gmpi. Any
 * other MPI: MPI_Get_count. */
static inline int gmpi_mpi_status_bytes(const MPI_Status *s, size_t *bytes) {
#if defined(OPEN_MPI) && OPEN_MPI && defined(OMPI_MAJOR_VERSION) &&                                \
    (OMPI_MAJOR_VERSION == 4 || OMPI_MAJOR_VERSION == 5)
  *bytes = s->_ucount;
  return 1;
#else
  int n = 0;
  if (PMPI_Get_count(s, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED) return 0;
  *bytes = (size_t)n;
  return 1;
#endif
}

#endif
