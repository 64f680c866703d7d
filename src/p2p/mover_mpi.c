/* The MPI mover: lanes are (peer, one tag) on a data communicator, which MPI keeps in order.
 * It lets the envelope engine run, and be tested, on machines without GPUs. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/error.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "envelope.h"

#define DATA_TAG 11

typedef struct {
  MPI_Comm data;
  size_t chunk;
} mpi_mover_t;

typedef struct {
  MPI_Request req;
  MPI_Datatype type;
} mpi_xfer_t;

static gmpi_status_t start(mpi_mover_t *m, int is_send, int peer, void *buf, size_t bytes,
                           void **handle) {
  mpi_xfer_t *x = calloc(1, sizeof(*x));
  if (!x) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  int n;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(bytes, m->chunk, &x->type, &n), st, free_x);
  if (is_send)
    GMPI_MPI_CHECK_GOTO(MPI_Isend(buf, n, x->type, peer, DATA_TAG, m->data, &x->req), st,
                        release_type);
  else
    GMPI_MPI_CHECK_GOTO(MPI_Irecv(buf, n, x->type, peer, DATA_TAG, m->data, &x->req), st,
                        release_type);
  *handle = x;
  return GMPI_SUCCESS;
release_type:
  gmpi_mpi_type_release(&x->type);
free_x:
  free(x);
  return st;
}

static gmpi_status_t mpi_send(void *ctx, int peer, const void *buf, size_t bytes, void **h) {
  return start(ctx, 1, peer, (void *)buf, bytes, h);
}
static gmpi_status_t mpi_recv(void *ctx, int peer, void *buf, size_t bytes, void **h) {
  return start(ctx, 0, peer, buf, bytes, h);
}

static gmpi_status_t mpi_test(void *ctx, void *handle, int *done) {
  (void)ctx;
  mpi_xfer_t *x = handle;
  GMPI_MPI_CHECK(MPI_Test(&x->req, done, MPI_STATUS_IGNORE));
  if (*done) {
    gmpi_mpi_type_release(&x->type);
    free(x);
  }
  return GMPI_SUCCESS;
}

static void mpi_cancel(void *ctx, void *handle) {
  (void)ctx;
  mpi_xfer_t *x = handle;
  MPI_Request_free(&x->req); /* the transfer may still run; the type stays alive with it */
  free(x);
}

static gmpi_status_t mpi_alloc(void *ctx, size_t bytes, void **ptr) {
  (void)ctx;
  *ptr = malloc(bytes);
  return *ptr ? GMPI_SUCCESS
              : gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to stage a %zu-byte message", bytes);
}
static void mpi_release(void *ctx, void *ptr, size_t bytes) {
  (void)ctx;
  (void)bytes;
  free(ptr);
}
static gmpi_status_t mpi_copy(void *ctx, void *dst, const void *src, size_t bytes) {
  (void)ctx;
  memcpy(dst, src, bytes);
  return GMPI_SUCCESS;
}

static const gmpi_mover_t mpi_mover = {
    .name = "mpi",
    .send = mpi_send,
    .recv = mpi_recv,
    .test = mpi_test,
    .cancel = mpi_cancel,
    .alloc = mpi_alloc,
    .release = mpi_release,
    .copy = mpi_copy,
    .self_copy = mpi_copy,
};

gmpi_status_t gmpi_env_create_mpi(gmpi_comm_t comm, MPI_Comm data_comm,
                                  struct gmpi_envelope_engine **out) {
  mpi_mover_t *m = calloc(1, sizeof(*m));
  if (!m) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the MPI mover");
  m->data = data_comm;
  m->chunk = comm->cfg.max_chunk;
  gmpi_status_t st = gmpi_env_create(comm, &mpi_mover, m, out);
  if (st != GMPI_SUCCESS) {
    free(m);
    return st;
  }
  gmpi_env_own_mover_ctx(*out);
  return GMPI_SUCCESS;
}
