/* SPDX-License-Identifier: BSD-3-Clause */
/* The model mover: host memory, and links that behave as NCCL's do, built on MPI so that the
 * envelope engine's scheduling is exercised on machines without GPUs (CI).
 *
 * What it models (measured on the H200: docs/design.md, "What NCCL point to point does"):
 *  1. a link connects at a moment both sides reach (here: a hello exchange at open/join);
 *  2. transfers on one link run one at a time, in the order issued: only the head of a link's
 *     queue is started, later ones wait behind it whatever their peer does;
 *  3. a send completes only once the peer has issued the matching receive (MPI_Issend).
 * Each transfer's MPI tag is its link position, so two ranks that issued a link's transfers in
 * different orders never pair the wrong ones: they wait, and the test that did it times out.
 *  4. copies, exposures and marks finish later than they start, as a device's do (the program's
 *     stream decides when): each is done at its second test, the copy made only then, so a
 *     destination read before its copy landed holds stale bytes and a source released before
 *     it was read is a use after free (the sanitizer runs see it). Exposure never describes a
 *     buffer (MPI gives no one-sided read to model CUDA IPC with), but its delay holds the
 *     rendezvous envelope as a device's pull envelope is held. Every third copy is done at
 *     once and every other exposure leaves its envelope to the engine's mark, as cuda's copy
 *     between host buffers and its link sends do; every other mark has passed at once, as
 *     cuda's for host memory has; every other buffer is host memory that a rendezvous moves over
 *     the engine's channel, as cuda's host buffers are.
 * Used under GMPI_P2P=envelope (the deadlock finder). */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/error.h"
#include "../core/mover.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "host.h"

#define HELLO_TAG 32767 /* positions use tags 0 .. 32766 (MPI guarantees 32767) */

/* What a handle is: both kinds start with it. */
typedef enum { MODEL_LINK_OP = 1, MODEL_COPY } model_kind_t;

typedef struct model_op {
  model_kind_t kind; /* MODEL_LINK_OP */
  int is_send;
  int peer;
  uint64_t k;
  void *buf;
  size_t bytes;
  int started, done, cancelled;
  MPI_Request req;
  MPI_Datatype type;
  struct model_op *next;
} model_op_t;

typedef struct {
  int state; /* 0: none, 1: connecting, 2: connected */
  MPI_Request hello[2];
  char hello_out, hello_in;
  model_op_t *head, *tail;
} model_link_t;

typedef struct {
  MPI_Comm data;
  size_t chunk;
  int size;
  model_link_t *links; /* per peer */
  unsigned exposures;  /* counts expose calls: every other one leaves the mark to the engine */
  unsigned copies;     /* counts copies: every third is done at once */
  unsigned marks;      /* counts marks: every other one has passed at once */
  unsigned hosts;      /* counts host_mem questions: every other buffer is "host memory" */
} model_t;

/* A copy (or, with no bytes, an exposure) the engine must test twice. */
typedef struct {
  model_kind_t kind; /* MODEL_COPY */
  int tests;
  void *dst;
  const void *src;
  size_t bytes;
} model_copy_t;

static gmpi_status_t start_copy(void *dst, const void *src, size_t bytes, void **handle) {
  model_copy_t *c = calloc(1, sizeof(*c));
  if (!c) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a copy");
  *c = (model_copy_t){.kind = MODEL_COPY, .dst = dst, .src = src, .bytes = bytes};
  *handle = c;
  return GMPI_SUCCESS;
}

/* Every third copy is done before the call returns (no handle), as cuda's between two host
 * buffers is: CI runs the engine's paths for both. */
static gmpi_status_t host_copy(void *ctx, void *dst, const void *src, size_t bytes, void **handle) {
  model_t *m = ctx;
  if (m->copies++ % 3 == 2) {
    *handle = NULL;
    memcpy(dst, src, bytes);
    return GMPI_SUCCESS;
  }
  return start_copy(dst, src, bytes, handle);
}

static gmpi_status_t copy_test(model_copy_t *c, int *done) {
  *done = ++c->tests >= 2;
  if (!*done) return GMPI_SUCCESS;
  if (c->bytes) memcpy(c->dst, c->src, c->bytes);
  free(c);
  return GMPI_SUCCESS;
}

/* A post's place on the "program's stream": passed at its second test, like a copy. Every
 * other one has passed at once, as cuda's for a buffer in host memory has: CI runs the engine's
 * paths for both (a receive that takes an eager message straight from the channel among them). */
static gmpi_status_t model_mark(void *ctx, const void *buf, void **handle) {
  model_t *m = ctx;
  (void)buf;
  *handle = NULL;
  if (m->marks++ % 2 == 1) return GMPI_SUCCESS;
  return start_copy(NULL, NULL, 0, handle);
}

/* No pull: every rendezvous takes the link, once the "program's stream" reached the send. Half
 * the exposures hold the envelope themselves (as cuda's pull exposure does), half leave it to
 * the engine's mark (as cuda does for a link): CI runs both of the engine's paths. */
static size_t model_expose(void *ctx, int peer, const void *buf, size_t bytes, void *blob,
                           void **ready) {
  model_t *m = ctx;
  (void)peer;
  (void)buf;
  (void)bytes;
  (void)blob;
  *ready = NULL;
  if (m->exposures++ % 2 == 0 && start_copy(NULL, NULL, 0, ready) != GMPI_SUCCESS)
    *ready = NULL; /* the engine's mark, then */
  return 0;
}

/* Every other buffer asked about is host memory the channel moves (as cuda's host buffers are),
 * the others device memory a link moves: CI runs a rendezvous both ways, and the mixed pairs. */
static int model_host_mem(void *ctx, const void *buf) {
  model_t *m = ctx;
  (void)buf;
  return m->hosts++ % 2 == 0;
}

static gmpi_status_t connect(model_t *m, int peer) {
  model_link_t *l = &m->links[peer];
  l->state = 1;
  GMPI_MPI_CHECK(PMPI_Isend(&l->hello_out, 1, MPI_CHAR, peer, HELLO_TAG, m->data, &l->hello[0]));
  GMPI_MPI_CHECK(PMPI_Irecv(&l->hello_in, 1, MPI_CHAR, peer, HELLO_TAG, m->data, &l->hello[1]));
  return GMPI_SUCCESS;
}

static gmpi_status_t model_open(void *ctx, int peer, void *blob, size_t *len) {
  memset(blob, 1, 1);
  *len = 1;
  return connect(ctx, peer);
}

static gmpi_status_t model_join(void *ctx, int peer, const void *blob, size_t len) {
  (void)blob;
  (void)len;
  return connect(ctx, peer);
}

/* Every rendezvous takes a link in the model (model_expose never describes a buffer). */
static int model_link_wanted(void *ctx, int peer) {
  (void)ctx;
  (void)peer;
  return 1;
}

static gmpi_status_t start_op(model_t *m, model_op_t *op) {
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(op->bytes, m->chunk, &op->type, &n));
  int tag = (int)(op->k % HELLO_TAG);
  int rc = op->is_send ? PMPI_Issend(op->buf, n, op->type, op->peer, tag, m->data, &op->req)
                       : PMPI_Irecv(op->buf, n, op->type, op->peer, tag, m->data, &op->req);
  if (rc != MPI_SUCCESS) return gmpi_mpi_error(rc, op->is_send ? "MPI_Isend" : "MPI_Irecv");
  op->started = 1;
  return GMPI_SUCCESS;
}

/* Run a link's queue: connect, then start its head, retire it when done, next. */
static gmpi_status_t pump(model_t *m, model_link_t *l) {
  if (l->state == 1) {
    int flag = 0;
    GMPI_MPI_CHECK(PMPI_Testall(2, l->hello, &flag, MPI_STATUSES_IGNORE));
    if (!flag) return GMPI_SUCCESS;
    l->state = 2;
  }
  while (l->state == 2 && l->head) {
    model_op_t *op = l->head;
    if (!op->started) GMPI_CHECK(start_op(m, op));
    int flag = 0;
    GMPI_MPI_CHECK(PMPI_Test(&op->req, &flag, MPI_STATUS_IGNORE));
    if (!flag) return GMPI_SUCCESS;
    gmpi_mpi_type_release(&op->type);
    l->head = op->next;
    if (!l->head) l->tail = NULL;
    op->done = 1;
    if (op->cancelled) free(op);
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t model_progress(void *ctx) {
  model_t *m = ctx;
  for (int p = 0; p < m->size; p++)
    if (m->links[p].state) GMPI_CHECK(pump(m, &m->links[p]));
  return GMPI_SUCCESS;
}

static gmpi_status_t issue(model_t *m, int is_send, int peer, uint64_t k, void *buf, size_t bytes,
                           void **handle) {
  model_link_t *l = &m->links[peer];
  if (!l->state)
    return gmpi_error(GMPI_ERR_INTERNAL, "model link to rank %d used before it was opened", peer);
  model_op_t *op = calloc(1, sizeof(*op));
  if (!op) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  *op = (model_op_t){
      .kind = MODEL_LINK_OP, .is_send = is_send, .peer = peer, .k = k, .buf = buf, .bytes = bytes};
  op->req = MPI_REQUEST_NULL;
  op->type = MPI_DATATYPE_NULL;
  if (l->tail)
    l->tail->next = op;
  else
    l->head = op;
  l->tail = op;
  *handle = op;
  return pump(m, l);
}

static gmpi_status_t model_send(void *ctx, int peer, uint64_t k, const void *buf, size_t bytes,
                                void **handle) {
  return issue(ctx, 1, peer, k, (void *)buf, bytes, handle);
}

static gmpi_status_t model_recv(void *ctx, int peer, uint64_t k, void *buf, size_t bytes,
                                void **handle) {
  return issue(ctx, 0, peer, k, buf, bytes, handle);
}

static gmpi_status_t model_test(void *ctx, void *handle, int *done) {
  if (*(model_kind_t *)handle == MODEL_COPY) return copy_test(handle, done);
  model_op_t *op = handle;
  GMPI_CHECK(pump(ctx, &((model_t *)ctx)->links[op->peer]));
  *done = op->done;
  if (op->done) free(op);
  return GMPI_SUCCESS;
}

/* A transfer given up stays in its link's order (the peer's counterpart is issued): it is
 * freed when it completes, or with the mover. A copy given up is never made. */
static void model_cancel(void *ctx, void *handle) {
  (void)ctx;
  if (*(model_kind_t *)handle == MODEL_COPY) {
    free(handle);
    return;
  }
  model_op_t *op = handle;
  if (op->done)
    free(op);
  else
    op->cancelled = 1;
}

static void model_destroy(void *ctx) {
  model_t *m = ctx;
  for (int p = 0; m->links && p < m->size; p++) {
    model_link_t *l = &m->links[p];
    for (model_op_t *op = l->head, *next; op; op = next) {
      next = op->next;
      if (op->started) PMPI_Request_free(&op->req); /* MPI may still touch op->buf */
      if (op->cancelled) free(op);                  /* others are freed by their owner's abandon */
    }
    for (int i = 0; l->state == 1 && i < 2; i++)
      if (l->hello[i] != MPI_REQUEST_NULL) PMPI_Request_free(&l->hello[i]);
  }
  free(m->links);
  free(m);
}

static gmpi_status_t model_link_ready(void *ctx, int peer, int *ready) {
  model_t *m = ctx;
  model_link_t *l = &m->links[peer];
  GMPI_CHECK(pump(m, l));
  *ready = l->state == 2;
  return GMPI_SUCCESS;
}

static const gmpi_mover_t model_mover = {
    .name = "mpi-model",
    .to_host = host_copy,
    .from_host = host_copy,
    .self_copy = host_copy,
    .mark = model_mark,
    .expose = model_expose,
    .link_open = model_open,
    .link_join = model_join,
    .link_wanted = model_link_wanted,
    .link_ready = model_link_ready,
    .link_send = model_send,
    .host_mem = model_host_mem,
    .link_recv = model_recv,
    .test = model_test,
    .cancel = model_cancel,
    .progress = model_progress,
    .destroy = model_destroy,
};

gmpi_status_t gmpi_host_model_mover(gmpi_comm_t comm, MPI_Comm data_comm,
                                    const gmpi_mover_t **mover, void **ctx) {
  model_t *m = calloc(1, sizeof(*m));
  if (!m || !(m->links = calloc((size_t)comm->size, sizeof(*m->links)))) {
    free(m);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the model mover");
  }
  m->data = data_comm;
  m->chunk = comm->cfg.max_chunk;
  m->size = comm->size;
  *mover = &model_mover;
  *ctx = m;
  return GMPI_SUCCESS;
}
