/* Collectives on host buffers: nonblocking MPI calls, waited under GMPI_TIMEOUT. Reductions
 * longer than GMPI_MAX_CHUNK elements are split into several calls; data movement of any size
 * is one call with a byte type (gmpi_mpi_bytes_type). */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/reduce.h"
#include "../../mpi/mpi_check.h"
#include "../../mpi/oob.h"
#include "../../mpi/types.h"
#include "cpu.h"

#define INLINE_REQS 8

/* The MPI requests of one collective. */
typedef struct {
  MPI_Request *reqs;
  int n, cap;
  MPI_Request inline_reqs[INLINE_REQS];
} req_list_t;

static void reqs_init(req_list_t *l) {
  l->reqs = l->inline_reqs;
  l->n = 0;
  l->cap = INLINE_REQS;
}

static gmpi_status_t reqs_slot(req_list_t *l, MPI_Request **slot) {
  if (l->n == l->cap) {
    MPI_Request *grown = malloc(2 * (size_t)l->cap * sizeof(*grown));
    if (!grown) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d MPI requests", 2 * l->cap);
    memcpy(grown, l->reqs, (size_t)l->n * sizeof(*grown));
    if (l->reqs != l->inline_reqs) free(l->reqs);
    l->reqs = grown;
    l->cap *= 2;
  }
  *slot = &l->reqs[l->n++];
  return GMPI_SUCCESS;
}

static gmpi_status_t reqs_wait(gmpi_comm_t comm, req_list_t *l, const char *what) {
  gmpi_status_t st = l->n ? gmpi_mpi_wait(comm, l->n, l->reqs, MPI_STATUSES_IGNORE, what) : 0;
  if (l->reqs != l->inline_reqs) free(l->reqs);
  reqs_init(l);
  return st;
}

typedef struct {
  gmpi_comm_t comm;
  MPI_Comm mc;
  const gmpi_coll_args_t *a;
  size_t es;    /* element size */
  size_t chunk; /* most elements per MPI reduction call */
} coll_ctx_t;

#define BYTES(ptr, elems, es) ((char *)(ptr) + (elems) * (es))

/* Allreduce (root < 0) or reduce to root, in chunks of at most c->chunk elements. */
static gmpi_status_t reduce_chunks(coll_ctx_t *c, int root, const char *what) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t = gmpi_mpi_dtype(a->dtype);
  MPI_Op op = gmpi_mpi_op(a->dtype, a->op);
  int gets_result = root < 0 || c->comm->rank == root;
  int in_place = gets_result && a->sendbuf == a->recvbuf;
  gmpi_status_t st = GMPI_SUCCESS;
  req_list_t l;
  reqs_init(&l);
  for (size_t off = 0; off < a->count; off += c->chunk) {
    int len = (int)(a->count - off < c->chunk ? a->count - off : c->chunk);
    MPI_Request *r;
    GMPI_CHECK_GOTO(reqs_slot(&l, &r), st, wait);
    const void *s = in_place ? MPI_IN_PLACE : BYTES(a->sendbuf, off, c->es);
    void *d = gets_result ? BYTES(a->recvbuf, off, c->es) : NULL;
    int rc = root < 0 ? MPI_Iallreduce(s, d, len, t, op, c->mc, r)
                      : MPI_Ireduce(s, d, len, t, op, root, c->mc, r);
    if (rc != MPI_SUCCESS) {
      l.n--;
      st = gmpi_mpi_error(rc, root < 0 ? "MPI_Iallreduce" : "MPI_Ireduce");
      break;
    }
  }
wait:;
  gmpi_status_t wst = reqs_wait(c->comm, &l, what);
  if (st == GMPI_SUCCESS) st = wst;
  if (st == GMPI_SUCCESS && gets_result && a->op == GMPI_AVG)
    gmpi_host_divide(a->dtype, a->recvbuf, a->count, c->comm->size);
  return st;
}

static gmpi_status_t run_allreduce(coll_ctx_t *c) { return reduce_chunks(c, -1, "allreduce"); }
static gmpi_status_t run_reduce(coll_ctx_t *c) { return reduce_chunks(c, c->a->root, "reduce"); }

static gmpi_status_t run_bcast(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t;
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(a->count * c->es, c->chunk, &t, &n));
  MPI_Request r;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(MPI_Ibcast(a->recvbuf, n, t, a->root, c->mc, &r), st, release_type);
  st = gmpi_mpi_wait(c->comm, 1, &r, MPI_STATUSES_IGNORE, "bcast");
release_type:
  gmpi_mpi_type_release(&t);
  return st;
}

static gmpi_status_t run_allgather(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t;
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(a->count * c->es, c->chunk, &t, &n));
  size_t block = a->count * c->es;
  int in_place = a->sendbuf == a->recvbuf ||
                 a->sendbuf == BYTES(a->recvbuf, (size_t)c->comm->rank, block);
  MPI_Request r;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(MPI_Iallgather(in_place ? MPI_IN_PLACE : a->sendbuf, n, t, a->recvbuf, n, t,
                                     c->mc, &r),
                      st, release_type);
  st = gmpi_mpi_wait(c->comm, 1, &r, MPI_STATUSES_IGNORE, "allgather");
release_type:
  gmpi_mpi_type_release(&t);
  return st;
}

/* Reduce-scatter beyond one MPI count: a reduce per destination rank, chunk by chunk. The
 * input is copied first when in place, so results never overwrite blocks still being read. */
static gmpi_status_t reduce_scatter_chunked(coll_ctx_t *c, const char *send) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t = gmpi_mpi_dtype(a->dtype);
  MPI_Op op = gmpi_mpi_op(a->dtype, a->op);
  gmpi_status_t st = GMPI_SUCCESS;
  req_list_t l;
  reqs_init(&l);
  for (int root = 0; root < c->comm->size && st == GMPI_SUCCESS; root++) {
    for (size_t off = 0; off < a->count; off += c->chunk) {
      int len = (int)(a->count - off < c->chunk ? a->count - off : c->chunk);
      MPI_Request *r;
      GMPI_CHECK_GOTO(reqs_slot(&l, &r), st, wait);
      const char *s = BYTES(send, (size_t)root * a->count + off, c->es);
      void *d = root == c->comm->rank ? BYTES(a->recvbuf, off, c->es) : NULL;
      int rc = MPI_Ireduce(s, d, len, t, op, root, c->mc, r);
      if (rc != MPI_SUCCESS) {
        l.n--;
        st = gmpi_mpi_error(rc, "MPI_Ireduce");
        break;
      }
    }
  }
wait:;
  gmpi_status_t wst = reqs_wait(c->comm, &l, "reduce_scatter");
  return st != GMPI_SUCCESS ? st : wst;
}

static gmpi_status_t run_reduce_scatter(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t block = a->count * c->es, all = block * (size_t)c->comm->size;
  const char *send = a->sendbuf;
  char *copy = NULL;
  int mpi_in_place = a->sendbuf == a->recvbuf;
  int nccl_in_place = !mpi_in_place && a->recvbuf == BYTES(a->sendbuf, (size_t)c->comm->rank, block);
  gmpi_status_t st = GMPI_SUCCESS;
  if (a->count > c->chunk) {
    if (mpi_in_place || nccl_in_place) {
      if (!(copy = malloc(all)))
        return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to stage %zu bytes of an in-place "
                          "reduce_scatter", all);
      memcpy(copy, a->sendbuf, all);
      send = copy;
    }
    st = reduce_scatter_chunked(c, send);
  } else {
    MPI_Request r;
    /* NCCL-style in place: reduce in MPI's in-place form, then move the result to its slot. */
    void *out = nccl_in_place ? (void *)a->sendbuf : a->recvbuf;
    GMPI_MPI_CHECK_GOTO(MPI_Ireduce_scatter_block((mpi_in_place || nccl_in_place) ? MPI_IN_PLACE
                                                                                 : a->sendbuf,
                                                  out, (int)a->count, gmpi_mpi_dtype(a->dtype),
                                                  gmpi_mpi_op(a->dtype, a->op), c->mc, &r),
                        st, free_copy);
    st = gmpi_mpi_wait(c->comm, 1, &r, MPI_STATUSES_IGNORE, "reduce_scatter");
    if (st == GMPI_SUCCESS && nccl_in_place) memmove(a->recvbuf, out, block);
  }
  if (st == GMPI_SUCCESS && a->op == GMPI_AVG)
    gmpi_host_divide(a->dtype, a->recvbuf, a->count, c->comm->size);
free_copy:
  free(copy);
  return st;
}

static gmpi_status_t run_alltoall(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t block = a->count * c->es, all = block * (size_t)c->comm->size;
  const void *send = a->sendbuf;
  char *copy = NULL;
  if (a->sendbuf == a->recvbuf && all) { /* in place: MPI's in-place alltoall is not everywhere */
    if (!(copy = malloc(all)))
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to stage %zu bytes of an in-place "
                        "alltoall", all);
    memcpy(copy, a->sendbuf, all);
    send = copy;
  }
  MPI_Datatype t;
  int n;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(block, c->chunk, &t, &n), st, free_copy);
  MPI_Request r;
  GMPI_MPI_CHECK_GOTO(MPI_Ialltoall(send, n, t, a->recvbuf, n, t, c->mc, &r), st, release_type);
  st = gmpi_mpi_wait(c->comm, 1, &r, MPI_STATUSES_IGNORE, "alltoall");
release_type:
  gmpi_mpi_type_release(&t);
free_copy:
  free(copy);
  return st;
}

static gmpi_status_t run_barrier(coll_ctx_t *c) {
  MPI_Request r;
  GMPI_MPI_CHECK(MPI_Ibarrier(c->mc, &r));
  return gmpi_mpi_wait(c->comm, 1, &r, MPI_STATUSES_IGNORE, "barrier");
}

typedef gmpi_status_t (*coll_fn_t)(coll_ctx_t *c);
static const coll_fn_t coll_table[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = run_allreduce,
    [GMPI_COLL_BCAST] = run_bcast,
    [GMPI_COLL_REDUCE] = run_reduce,
    [GMPI_COLL_ALLGATHER] = run_allgather,
    [GMPI_COLL_REDUCE_SCATTER] = run_reduce_scatter,
    [GMPI_COLL_ALLTOALL] = run_alltoall,
    [GMPI_COLL_BARRIER] = run_barrier,
};

gmpi_status_t gmpi_cpu_coll(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a) {
  coll_ctx_t c = {.comm = comm,
                  .mc = cpu->data,
                  .a = a,
                  .es = gmpi_dtype_size(a->dtype),
                  .chunk = comm->cfg.max_chunk};
  return coll_table[a->kind](&c);
}
