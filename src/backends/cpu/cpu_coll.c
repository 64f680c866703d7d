/* Collectives on host buffers. Every rank must first pass an arrival gate -- a nonblocking
 * barrier waited under GMPI_TIMEOUT while driving gmpi's engines (or the GMPI_CHECK signature
 * exchange, which gates as well) -- then MPI's tuned blocking collective runs (see gated()).
 * Nonblocking collectives alone would bound the wait too, but OpenMPI's are up to 4x slower
 * (docs/performance.md). Reductions longer than GMPI_MAX_CHUNK elements are split into several
 * calls; data movement of any size is one call with a byte type (gmpi_mpi_bytes_type). */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/ops.h"
#include "../../core/reduce.h"
#include "../../mpi/mpi_check.h"
#include "../../mpi/oob.h"
#include "../../mpi/types.h"
#include "cpu.h"

typedef struct {
  gmpi_comm_t comm;
  MPI_Comm mc;
  const gmpi_coll_args_t *a;
  size_t es;    /* element size */
  size_t chunk; /* most elements per MPI reduction call */
} coll_ctx_t;

#define BYTES(ptr, elems, es) ((char *)(ptr) + (elems) * (es))

/* Allreduce (root < 0) or reduce to root, in chunks of at most c->chunk elements. */
static gmpi_status_t reduce_chunks(coll_ctx_t *c, int root) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t = gmpi_mpi_dtype(a->dtype);
  MPI_Op op = gmpi_mpi_op(a->dtype, a->op);
  int gets_result = root < 0 || c->comm->rank == root;
  int in_place = gets_result && a->sendbuf == a->recvbuf;
  for (size_t off = 0; off < a->count; off += c->chunk) {
    int len = (int)(a->count - off < c->chunk ? a->count - off : c->chunk);
    const void *s = in_place ? MPI_IN_PLACE : BYTES(a->sendbuf, off, c->es);
    void *d = gets_result ? BYTES(a->recvbuf, off, c->es) : NULL;
    if (root < 0)
      GMPI_MPI_CHECK(MPI_Allreduce(s, d, len, t, op, c->mc));
    else
      GMPI_MPI_CHECK(MPI_Reduce(s, d, len, t, op, root, c->mc));
  }
  if (gets_result && a->op == GMPI_AVG)
    gmpi_host_divide(a->dtype, a->recvbuf, a->count, c->comm->size);
  return GMPI_SUCCESS;
}

static gmpi_status_t run_allreduce(coll_ctx_t *c) { return reduce_chunks(c, -1); }
static gmpi_status_t run_reduce(coll_ctx_t *c) { return reduce_chunks(c, c->a->root); }

static gmpi_status_t run_bcast(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t;
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(a->count * c->es, c->chunk, &t, &n));
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(MPI_Bcast(a->recvbuf, n, t, a->root, c->mc), st, release_type);
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
  int in_place =
      a->sendbuf == a->recvbuf || a->sendbuf == BYTES(a->recvbuf, (size_t)c->comm->rank, block);
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(
      MPI_Allgather(in_place ? MPI_IN_PLACE : a->sendbuf, n, t, a->recvbuf, n, t, c->mc), st,
      release_type);
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
  for (int root = 0; root < c->comm->size; root++) {
    for (size_t off = 0; off < a->count; off += c->chunk) {
      int len = (int)(a->count - off < c->chunk ? a->count - off : c->chunk);
      const char *s = BYTES(send, (size_t)root * a->count + off, c->es);
      void *d = root == c->comm->rank ? BYTES(a->recvbuf, off, c->es) : NULL;
      GMPI_MPI_CHECK(MPI_Reduce(s, d, len, t, op, root, c->mc));
    }
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t run_reduce_scatter(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t block = a->count * c->es, all = block * (size_t)c->comm->size;
  const char *send = a->sendbuf;
  char *copy = NULL;
  int mpi_in_place = a->sendbuf == a->recvbuf;
  int nccl_in_place =
      !mpi_in_place && a->recvbuf == BYTES(a->sendbuf, (size_t)c->comm->rank, block);
  gmpi_status_t st = GMPI_SUCCESS;
  if (a->count > c->chunk) {
    if (mpi_in_place || nccl_in_place) {
      if (!(copy = malloc(all)))
        return gmpi_error(GMPI_ERR_NO_MEMORY,
                          "no memory to stage %zu bytes of an in-place "
                          "reduce_scatter",
                          all);
      memcpy(copy, a->sendbuf, all);
      send = copy;
    }
    st = reduce_scatter_chunked(c, send);
  } else {
    /* NCCL-style in place: reduce in MPI's in-place form, then move the result to its slot. */
    void *out = nccl_in_place ? (void *)a->sendbuf : a->recvbuf;
    GMPI_MPI_CHECK_GOTO(
        MPI_Reduce_scatter_block((mpi_in_place || nccl_in_place) ? MPI_IN_PLACE : a->sendbuf, out,
                                 (int)a->count, gmpi_mpi_dtype(a->dtype),
                                 gmpi_mpi_op(a->dtype, a->op), c->mc),
        st, free_copy);
    if (nccl_in_place) memmove(a->recvbuf, out, block);
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
      return gmpi_error(GMPI_ERR_NO_MEMORY,
                        "no memory to stage %zu bytes of an in-place "
                        "alltoall",
                        all);
    memcpy(copy, a->sendbuf, all);
    send = copy;
  }
  MPI_Datatype t;
  int n;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(block, c->chunk, &t, &n), st, free_copy);
  GMPI_MPI_CHECK_GOTO(MPI_Alltoall(send, n, t, a->recvbuf, n, t, c->mc), st, release_type);
release_type:
  gmpi_mpi_type_release(&t);
free_copy:
  free(copy);
  return st;
}

static gmpi_status_t run_barrier(coll_ctx_t *c) {
  (void)c;
  return GMPI_SUCCESS; /* the arrival gate was the barrier */
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

/* Progress during collectives. A rank blocked inside an MPI collective cannot drive gmpi's
 * envelope engines, and a peer's gmpi_send may wait on them (its receive is posted here, but
 * only the engine matches it and starts the data) before that peer can join the collective:
 * both would wait forever. So the blocking call is entered only after the arrival gate, which
 * polls and drives every engine (gmpi_mpi_wait). The gate is enough:
 *  - the gate completes on this rank only once every rank of the comm has entered it, so every
 *    peer's earlier sends to us have completed (a blocked sender would not have arrived);
 *  - past the gate, each rank runs only this collective's MPI calls (or more gates), which
 *    MPI progresses by itself and which wait on no engine; every rank is inside the same call,
 *    so the blocking call returns after its own duration, and this rank then drives its
 *    engines again. A rank of another comm waiting on us is only delayed that long.
 * Under GMPI_CHECK the signature exchange is a polled allgather: it proves arrival the same way.
 * Whether to gate must be the same on every rank (a barrier on some ranks only would itself
 * hang), so it is decided from what all ranks of the comm share -- the timeout, and whether
 * this comm's point-to-point runs on an envelope engine (GMPI_P2P=envelope, GMPI_CHECK=1, a
 * device engine) -- and not from this process's registered engines. Not covered: GMPI_TIMEOUT=0 on
 * a native-MPI comm of a process whose other comms (another backend) have engines. */
static int gated(gmpi_comm_t comm, const gmpi_cpu_t *cpu) {
  return comm->cfg.timeout_s > 0 || cpu->env || comm->device_engine.ops;
}

static gmpi_status_t barrier_wait(gmpi_comm_t comm, gmpi_cpu_t *cpu, const char *what) {
  MPI_Request r;
  GMPI_MPI_CHECK(MPI_Ibarrier(cpu->data, &r));
  return gmpi_mpi_wait(comm, 1, &r, MPI_STATUSES_IGNORE, what);
}

/* Every rank has reached this plan replay, or GMPI_ERR_TIMEOUT. Nothing when ungated: then no
 * engine runs and waits are unbounded, and MPI's own calls are the fastest way. */
gmpi_status_t gmpi_cpu_gate(gmpi_comm_t comm, gmpi_cpu_t *cpu) {
  if (!gated(comm, cpu)) return GMPI_SUCCESS;
  return barrier_wait(comm, cpu, "the arrival gate");
}

static gmpi_status_t arrival_gate(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a) {
  if (comm->cfg.check && a->kind != GMPI_COLL_BARRIER) return GMPI_SUCCESS;
  if (!gated(comm, cpu)) {
    if (a->kind == GMPI_COLL_BARRIER) GMPI_MPI_CHECK(MPI_Barrier(cpu->data));
    return GMPI_SUCCESS;
  }
  return barrier_wait(comm, cpu, gmpi_coll_name(a->kind));
}

gmpi_status_t gmpi_cpu_coll(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a) {
  GMPI_CHECK(arrival_gate(comm, cpu, a));
  return gmpi_cpu_coll_run(comm, cpu, a);
}

gmpi_status_t gmpi_cpu_coll_run(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a) {
  coll_ctx_t c = {.comm = comm,
                  .mc = cpu->data,
                  .a = a,
                  .es = gmpi_dtype_size(a->dtype),
                  .chunk = comm->cfg.max_chunk};
  return coll_table[a->kind](&c);
}
