/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans on host buffers: each matched send and receive becomes an MPI persistent request on
 * the comm's plan channel (their own MPI communicator: eager traffic can never steal them),
 * created once; collectives stay MPI's tuned blocking calls (their polled nonblocking forms
 * under GMPI_TIMEOUT_ACTION=status, as eager ones). A replay passes one arrival gate, then
 * runs the steps in order: a collective directly, a group of point-to-point steps as
 * MPI_Startall + a bounded wait. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/error.h"
#include "../core/ops.h"
#include "../core/plan.h"
#include "../core/plan_fuse.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"
#include "../mpi/types.h"
#include "host.h"

/* The largest fused run packed into one MPI call unless GMPI_PLAN_PACK_BYTES says otherwise:
 * from 3 MB on, Open MPI's one large allreduce on shared memory measured slower than the 100
 * small ones it replaced, at 400 KB still 0.7x of them (docs/performance.md). */
#define GMPI_HOST_PACK_BYTES ((size_t)512 << 10)

typedef struct {
  int n;               /* persistent requests */
  MPI_Request *reqs;   /* in step order */
  MPI_Datatype *types; /* their byte types */
  int *first, *count;  /* per group: first request and how many (0 for a collective) */
  int n_groups;
  void *packed; /* fused runs' packed buffer, as large as the largest run (plan_fuse.h) */
  gmpi_plan_slice_t *slices; /* every packed run's copies, run after run */
  size_t *slice_at;          /* per step: a packed run's first slice (its first step only) */
} host_plan_t;

void gmpi_host_plan_free(void *lowered) {
  host_plan_t *cp = lowered;
  if (!cp) return;
  for (int i = 0; i < cp->n; i++) {
    if (cp->reqs[i] != MPI_REQUEST_NULL) PMPI_Request_free(&cp->reqs[i]);
    gmpi_mpi_type_release(&cp->types[i]);
  }
  free(cp->reqs);
  free(cp->types);
  free(cp->first);
  free(cp->count);
  free(cp->packed);
  free(cp->slices);
  free(cp->slice_at);
  free(cp);
}

static gmpi_status_t persistent(gmpi_comm_t comm, MPI_Comm mc, gmpi_plan_step_t *s,
                                MPI_Request *req, MPI_Datatype *type) {
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(s->bytes, comm->cfg.max_chunk, type, &n));
  if (s->kind == PLAN_SEND) {
    GMPI_MPI_CHECK(PMPI_Send_init(s->p2p.buf, n, *type, s->peer, s->tag, mc, req));
    snprintf(s->lowered, sizeof(s->lowered), "MPI_Send_init+Start");
  } else {
    GMPI_MPI_CHECK(PMPI_Recv_init(s->p2p.buf, n, *type, s->peer, s->tag, mc, req));
    snprintf(s->lowered, sizeof(s->lowered), "MPI_Recv_init+Start");
  }
  return GMPI_SUCCESS;
}

static void name_step(gmpi_plan_step_t *s, int nranks) {
  static const char *const mpi_name[GMPI_COLL_KIND_COUNT] = {
      [GMPI_COLL_ALLREDUCE] = "MPI_Allreduce",
      [GMPI_COLL_BCAST] = "MPI_Bcast",
      [GMPI_COLL_REDUCE] = "MPI_Reduce",
      [GMPI_COLL_ALLGATHER] = "MPI_Allgather",
      [GMPI_COLL_REDUCE_SCATTER] = "MPI_Reduce_scatter_block",
      [GMPI_COLL_ALLTOALL] = "MPI_Alltoall",
      [GMPI_COLL_BARRIER] = "MPI_Barrier",
      [GMPI_COLL_GATHER] = "MPI_Gather",
      [GMPI_COLL_SCATTER] = "MPI_Scatter",
      [GMPI_COLL_ALLGATHERV] = "MPI_Allgatherv",
      [GMPI_COLL_GATHERV] = "MPI_Gatherv",
      [GMPI_COLL_SCATTERV] = "MPI_Scatterv",
      [GMPI_COLL_ALLTOALLV] = "MPI_Alltoallv",
      [GMPI_COLL_REDUCE_SCATTERV] = "MPI_Reduce_scatter",
  };
  if (s->kind == PLAN_COLL && s->run_len == 0) /* a later member of a fused run */
    snprintf(s->lowered, sizeof(s->lowered), "(packed into step %d's call)", s->run_first);
  else if (s->kind == PLAN_COLL && s->run_len > 1)
    snprintf(s->lowered, sizeof(s->lowered), "%s (%d fused, packed, %zu B)", mpi_name[s->coll.kind],
             s->run_len, gmpi_plan_run_bytes(s, nranks));
  else if (s->kind == PLAN_COLL)
    snprintf(s->lowered, sizeof(s->lowered), "%s", mpi_name[s->coll.kind]);
  if (s->kind == PLAN_WAIT) snprintf(s->lowered, sizeof(s->lowered), "(group end: MPI_Waitall)");
}

/* The packed buffer (as large as the largest run) and every packed run's slices. */
static gmpi_status_t plan_packing(gmpi_comm_t comm, const struct gmpi_plan *plan, host_plan_t *cp) {
  size_t packed = 0, slices = 0;
  for (int i = 0; i < plan->n_steps; i++) {
    const gmpi_plan_step_t *s = &plan->steps[i];
    if (s->kind != PLAN_COLL || s->run_len < 2) continue;
    size_t b = gmpi_plan_run_bytes(s, comm->size);
    packed = b > packed ? b : packed;
    slices += (size_t)s->run_len;
  }
  if (!packed) return GMPI_SUCCESS;
  if (!(cp->packed = malloc(packed)) || !(cp->slices = malloc(slices * sizeof(*cp->slices))) ||
      !(cp->slice_at = calloc((size_t)plan->n_steps, sizeof(size_t))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan's %zu-byte packed buffer", packed);
  size_t at = 0;
  for (int i = 0; i < plan->n_steps; i++) {
    const gmpi_plan_step_t *s = &plan->steps[i];
    if (s->kind != PLAN_COLL || s->run_len < 2) continue;
    cp->slice_at[i] = at;
    at += (size_t)gmpi_plan_run_slices(plan->steps, plan->n_steps, i, comm->rank, cp->slices + at);
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_plan_lower(gmpi_comm_t comm, gmpi_host_t *host, struct gmpi_plan *plan,
                                   void **lowered) {
  /* Collective: every rank compiles the same plan, and all have arrived (the plan check's
   * polled allgather came first); still polled, so a rank that stops in between cannot hold
   * the others beyond GMPI_TIMEOUT. */
  if (host->plans == MPI_COMM_NULL) {
    gmpi_status_t dup =
        gmpi_mpi_dup(host->data, comm->cfg.timeout_s,
                     "the plan channel's communicator (MPI_Comm_idup)", &host->plans);
    if (dup == GMPI_ERR_TIMEOUT) gmpi_comm_fail(comm, dup);
    GMPI_CHECK(dup);
    GMPI_MPI_CHECK(PMPI_Comm_set_errhandler(host->plans, MPI_ERRORS_RETURN));
  }
  host_plan_t *cp = calloc(1, sizeof(*cp));
  int ns = plan->n_steps, ng = plan->n_groups;
  gmpi_status_t st = GMPI_SUCCESS;
  if (!cp || !(cp->reqs = calloc((size_t)ns + 1, sizeof(MPI_Request))) ||
      !(cp->types = calloc((size_t)ns + 1, sizeof(MPI_Datatype))) ||
      !(cp->first = calloc((size_t)ng + 1, sizeof(int))) ||
      !(cp->count = calloc((size_t)ng + 1, sizeof(int)))) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to lower a plan of %d steps", ns);
    goto fail;
  }
  cp->n_groups = ng;
  gmpi_plan_pack_limit(plan->steps, ns, comm->size, comm->cfg.plan_pack_bytes,
                       GMPI_HOST_PACK_BYTES);
  GMPI_CHECK_GOTO(plan_packing(comm, plan, cp), st, fail);
  for (int i = 0; i < ns; i++) {
    gmpi_plan_step_t *s = &plan->steps[i];
    name_step(s, comm->size);
    if (s->kind != PLAN_SEND && s->kind != PLAN_RECV) continue;
    if (cp->count[s->group]++ == 0) cp->first[s->group] = cp->n;
    cp->types[cp->n] = MPI_DATATYPE_NULL;
    cp->reqs[cp->n] = MPI_REQUEST_NULL;
    GMPI_CHECK_GOTO(persistent(comm, host->plans, s, &cp->reqs[cp->n], &cp->types[cp->n]), st,
                    fail);
    cp->n++;
  }
  *lowered = cp;
  return GMPI_SUCCESS;
fail:
  gmpi_host_plan_free(cp);
  return st;
}

/* One collective's copies into the packed buffer (to: 1) or out of it (to: 0), row by row. */
static void copy_rows(char *packed, const gmpi_plan_rows_t *r, const gmpi_plan_slice_t *sl,
                      int to) {
  int rows = to ? r->pack_rows : r->unpack_rows, row = to ? r->pack_row : r->unpack_row;
  for (int k = 0; k < rows; k++) {
    char *at = packed + (size_t)(row + k) * r->row_bytes + sl->offset;
    size_t user = rows > 1 ? (size_t)k * sl->bytes : 0;
    if (to && sl->in) memcpy(at, (const char *)sl->in + user, sl->bytes);
    if (!to && sl->out) memcpy((char *)sl->out + user, at, sl->bytes);
  }
}

/* Copy the inputs of the run that starts at step first into the packed buffer (to: 1), or the
 * packed results out (to: 0). */
static void move_run(const host_plan_t *cp, const gmpi_plan_step_t *f, int first, int to,
                     gmpi_comm_t comm) {
  gmpi_plan_rows_t r = gmpi_plan_run_rows(f, comm->rank, comm->size);
  const gmpi_plan_slice_t *sl = cp->slices + cp->slice_at[first];
  for (int j = 0; j < f->run_len; j++)
    copy_rows(cp->packed, &r, &sl[j], to);
}

/* A collective step: run alone, run its whole fused run packed, or nothing (a later member of
 * a run, already run). */
static gmpi_status_t replay_coll(gmpi_comm_t comm, gmpi_host_t *host, const struct gmpi_plan *plan,
                                 const host_plan_t *cp, int i) {
  const gmpi_plan_step_t *s = &plan->steps[i];
  if (s->run_len == 0) return GMPI_SUCCESS;
  gmpi_coll_args_t fused;
  const gmpi_coll_args_t *a = &s->coll;
  if (s->run_len > 1) {
    move_run(cp, s, i, 1, comm);
    fused = gmpi_plan_fused_args(s, cp->packed);
    a = &fused;
  }
  /* watched, or polled under GMPI_TIMEOUT_ACTION=status */
  gmpi_status_t st = gmpi_host_coll_past_gate(comm, host, a);
  if (st == GMPI_SUCCESS && s->run_len > 1) move_run(cp, s, i, 0, comm);
  return st;
}

gmpi_status_t gmpi_host_plan_replay(gmpi_comm_t comm, gmpi_host_t *host, struct gmpi_plan *plan,
                                    void *lowered) {
  host_plan_t *cp = lowered;
  /* One gate for the replay: past it every rank is in this replay, whose blocking collectives
   * then wait on no engine (the argument at gated() in host_coll.c). */
  GMPI_CHECK(gmpi_host_gate(comm, host));
  int group = -1;
  for (int i = 0; i < plan->n_steps; i++) {
    gmpi_plan_step_t *s = &plan->steps[i];
    if (s->kind == PLAN_COLL) {
      GMPI_CHECK(replay_coll(comm, host, plan, cp, i));
      continue;
    }
    if (s->kind == PLAN_WAIT || s->group == group) continue;
    group = s->group; /* the first step of a p2p group: run the whole group */
    int k = cp->count[group];
    MPI_Request *r = &cp->reqs[cp->first[group]];
    GMPI_MPI_CHECK(PMPI_Startall(k, r));
    GMPI_CHECK(gmpi_mpi_wait(comm, k, r, MPI_STATUSES_IGNORE, "a plan's point-to-point group"));
  }
  return GMPI_SUCCESS;
}
