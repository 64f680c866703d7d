/* SPDX-License-Identifier: BSD-3-Clause */
/* Framed native messages under GMPI_CHECK=1 (host_native.h): [header][payload] as one MPI
 * message, so the receive learns the sender's dtype and count with the data and no round of
 * its own. The two ends choose how to build the message independently (a copy behind the
 * header, or a struct type over the header and the caller's buffer): on the wire both are the
 * same bytes, and MPI's type signatures are plain bytes either way. */
#include <stdlib.h>
#include <string.h>

#include "../core/dtype.h"
#include "../core/error.h"
#include "../core/park.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "host_native.h"

#define HOST_FRAME_MAGIC 0x676d6368u /* "gmch" */
#define HDR_BYTES        sizeof(host_frame_hdr_t)

/* Staging for hdr + payload bytes, the old buffer reused when it is large enough. */
static gmpi_status_t reserve_staging(host_frame_t *f, size_t payload) {
  size_t need = HDR_BYTES + payload;
  if (f->staging_cap >= need) return GMPI_SUCCESS;
  void *grown = realloc(f->staging, need);
  if (!grown) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a checked message's copy");
  f->staging = grown;
  f->staging_cap = need;
  return GMPI_SUCCESS;
}

/* One struct type at absolute addresses: the header's bytes, then the payload's. */
static gmpi_status_t struct_type(host_frame_t *f, void *payload, size_t bytes, size_t limit,
                                 MPI_Datatype *type) {
  MPI_Datatype body;
  int body_n;
  GMPI_CHECK(gmpi_mpi_bytes_type(bytes, limit, &body, &body_n));
  int lens[2] = {(int)HDR_BYTES, body_n};
  MPI_Aint where[2];
  MPI_Datatype parts[2] = {MPI_BYTE, body};
  PMPI_Get_address(&f->hdr, &where[0]);
  PMPI_Get_address(payload, &where[1]);
  int rc = PMPI_Type_create_struct(2, lens, where, parts, type);
  gmpi_mpi_type_release(&body);
  if (rc != MPI_SUCCESS) return gmpi_mpi_error(rc, "MPI_Type_create_struct");
  rc = PMPI_Type_commit(type);
  if (rc != MPI_SUCCESS) {
    PMPI_Type_free(type);
    return gmpi_mpi_error(rc, "MPI_Type_commit");
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_frame(host_frame_t *f, const gmpi_p2p_args_t *a, size_t limit,
                              size_t copy_max, void **buf, int *n, MPI_Datatype *type) {
  size_t bytes = gmpi_p2p_bytes(a);
  int sending = a->dir == GMPI_P2P_SEND;
  if (sending) f->hdr = (host_frame_hdr_t){HOST_FRAME_MAGIC, (int32_t)a->dtype, a->count};
  f->copied = bytes <= copy_max;
  if (!f->copied) {
    GMPI_CHECK(struct_type(f, a->buf, bytes, limit, type));
    *buf = MPI_BOTTOM;
    *n = 1;
    return GMPI_SUCCESS;
  }
  GMPI_CHECK(reserve_staging(f, bytes));
  if (sending) {
    memcpy(f->staging, &f->hdr, HDR_BYTES);
    if (bytes) memcpy((char *)f->staging + HDR_BYTES, a->buf, bytes);
  }
  *buf = f->staging;
  *n = (int)(HDR_BYTES + bytes);
  *type = MPI_BYTE;
  return GMPI_SUCCESS;
}

void gmpi_host_unframe(host_frame_t *f, const gmpi_p2p_args_t *a, host_recv_end_t *end) {
  end->checked = 1;
  end->sender_dtype = -1;
  if (end->truncated || end->mpi_rc != MPI_SUCCESS) return;
  if (end->bytes < HDR_BYTES) { /* no header: a rank without GMPI_CHECK sent it */
    end->bytes = 0;
    return;
  }
  size_t payload = end->bytes - HDR_BYTES;
  end->bytes = payload;
  if (f->copied) memcpy(&f->hdr, f->staging, HDR_BYTES);
  if (f->hdr.magic != HOST_FRAME_MAGIC) return;
  end->sender_dtype = f->hdr.dtype;
  /* Another dtype writes nothing into the receive buffer (a struct-typed receive has, by now).
   * The staging buffer holds at most a->count elements: MPI truncated anything longer. */
  if (f->copied && payload && f->hdr.dtype == (int32_t)a->dtype)
    memcpy(a->buf, (char *)f->staging + HDR_BYTES, payload);
}

void gmpi_host_frame_free(host_frame_t *f) {
  free(f->staging);
  f->staging = NULL;
  f->staging_cap = 0;
}

void gmpi_host_frame_park(host_frame_t *f) {
  if (f->staging) gmpi_park(f->staging);
  f->staging = NULL;
  f->staging_cap = 0;
}
