/* SPDX-License-Identifier: BSD-3-Clause */
/* Staging: what gmpi cannot move natively on device memory (derived types in reductions,
 * user-defined ops, MINLOC/MAXLOC pairs, buffered sends, comms without a twin) is copied to host
 * memory, handed to MPI there, and copied back; a derived type in point to point or a
 * data-moving collective is staged to be packed (or unpacked) in host memory. The span copied is
 * the type's true extent over count elements, so the holes of a derived type keep what the
 * device held. Every failure is reported here (the comm's error handler is called once), so a
 * caller only passes the code on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"

/* A span the layer cannot stage: MPI's class, named on stderr like gmpi's errors. */
static int refuse(MPI_Comm comm, int code, const char *why) {
  fprintf(stderr, "[gmpi_mpi] staging a device buffer: %s\n", why);
  PMPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
  return code;
}

int dropin_stage_in(dropin_stage_t *s, MPI_Comm comm, void **buf, MPI_Aint count,
                    MPI_Datatype type) {
  if (count > 0 && dropin_is_device(*buf)) return dropin_stage_device_in(s, comm, buf, count, type);
  memset(s, 0, sizeof(*s));
  s->comm = comm;
  return MPI_SUCCESS;
}

int dropin_stage_device_in(dropin_stage_t *s, MPI_Comm comm, void **buf, MPI_Aint count,
                           MPI_Datatype type) {
  memset(s, 0, sizeof(*s));
  s->comm = comm;
  if (count <= 0) return MPI_SUCCESS;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &tlb, &textent);
  if (extent < 0 || textent < 0) return refuse(comm, MPI_ERR_TYPE, "a type of negative extent");
  s->user = *buf;
  s->lb = tlb;
  s->bytes = (size_t)((count - 1) * extent + textent);
  if (!(s->host = malloc(s->bytes ? s->bytes : 1)))
    return refuse(comm, MPI_ERR_NO_MEM, "no host memory for its copy");
  gmpi_status_t st = gmpi_mem_copy(dropin_copier(comm), s->host, (char *)s->user + s->lb, s->bytes);
  if (st != GMPI_SUCCESS) {
    free(s->host);
    s->host = NULL;
    return dropin_fail(comm, "staging a device buffer", st);
  }
  *buf = s->host - s->lb;
  return MPI_SUCCESS;
}

int dropin_stage_out(dropin_stage_t *s, int copy_back) {
  if (!s->host) return MPI_SUCCESS;
  gmpi_status_t st = GMPI_SUCCESS;
  if (copy_back) {
    st = gmpi_mem_copy(dropin_copier(s->comm), (char *)s->user + s->lb, s->host, s->bytes);
  }
  free(s->host);
  s->host = NULL;
  return st == GMPI_SUCCESS ? MPI_SUCCESS
                            : dropin_fail(s->comm, "copying a staged buffer back", st);
}
