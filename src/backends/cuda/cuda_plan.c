/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans on the cuda backend: the whole plan becomes one CUDA graph, captured once from gmpi's
 * stream. Each point-to-point group is one NCCL group on the comm's communicator (matching is
 * resolved, so no envelopes), the collectives of one fusion run (core/plan_fuse.h: small,
 * independent on every rank) share one NCCL group, and the rest (fallback kernels, copies) is
 * captured as it is eagerly. A replay is one cudaGraphLaunch on the comm's stream: blocking mode
 * then waits for it (bounded), stream-ordered mode returns at once. Plans on host buffers never
 * come here (core routes them to the MPI engine: MPI calls cannot be captured). */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/ops.h"
#include "../../core/plan.h"
#include "cuda.h"
#include "cuda_check.h"

typedef struct {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
} cuda_plan_t;

static const char *const nccl_name[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = "ncclAllReduce",
    [GMPI_COLL_BCAST] = "ncclBroadcast",
    [GMPI_COLL_REDUCE] = "ncclReduce",
    [GMPI_COLL_ALLGATHER] = "ncclAllGather",
    [GMPI_COLL_REDUCE_SCATTER] = "ncclReduceScatter",
    [GMPI_COLL_ALLTOALL] = "ncclSend/Recv x N",
    [GMPI_COLL_BARRIER] = "ncclAllReduce (1 int)",
    [GMPI_COLL_GATHER] = "ncclGather",
    [GMPI_COLL_SCATTER] = "ncclScatter",
    [GMPI_COLL_ALLGATHERV] = "ncclSend/Recv x N",
    [GMPI_COLL_GATHERV] = "ncclSend/Recv x N",
    [GMPI_COLL_SCATTERV] = "ncclSend/Recv x N",
    [GMPI_COLL_ALLTOALLV] = "ncclSend/Recv x N",
    [GMPI_COLL_REDUCE_SCATTERV] = "ncclReduce x N",
};

/* Size the comm's scratch for every step now: a capture cannot allocate. */
static gmpi_status_t presize_scratch(gmpi_comm_t comm, struct gmpi_plan *plan) {
  size_t need = 0;
  for (int i = 0; i < plan->n_steps; i++) {
    if (plan->steps[i].kind != PLAN_COLL) continue;
    size_t n = cuda_coll_scratch_need(comm, &plan->steps[i].coll);
    if (n > GMPI_CUDA_SCRATCH_BYTES && plan->steps[i].coll.kind == GMPI_COLL_ALLTOALL)
      return gmpi_error(GMPI_ERR_UNSUPPORTED,
                        "step %d: an in-place alltoall of %zu bytes is "
                        "over the %zu-byte scratch a plan may use; use separate buffers",
                        i, n, (size_t)GMPI_CUDA_SCRATCH_BYTES);
    need = n > need ? n : need;
  }
  void *unused;
  return need ? cuda_comm_scratch(comm->be, need, &unused) : GMPI_SUCCESS;
}

/* The point-to-point steps of group g, as one NCCL group. */
static gmpi_status_t capture_p2p_group(gmpi_comm_t comm, struct gmpi_plan *plan, int g,
                                       cudaStream_t s) {
  ncclComm_t nc = ((cuda_comm_t *)comm->be)->nccl;
  GMPI_NCCL_ENQUEUE(comm, nc, ncclGroupStart());
  for (int i = 0; i < plan->n_steps; i++) {
    gmpi_plan_step_t *st = &plan->steps[i];
    if (st->group != g || (st->kind != PLAN_SEND && st->kind != PLAN_RECV)) continue;
    int send = st->kind == PLAN_SEND;
    snprintf(st->lowered, sizeof(st->lowered), "%s (NCCL group %d)", send ? "ncclSend" : "ncclRecv",
             g);
    if (!st->bytes) continue;
    if (send)
      GMPI_NCCL_ENQUEUE(comm, nc, ncclSend(st->p2p.buf, st->bytes, ncclUint8, st->peer, nc, s));
    else
      GMPI_NCCL_ENQUEUE(comm, nc, ncclRecv(st->p2p.buf, st->bytes, ncclUint8, st->peer, nc, s));
  }
  GMPI_NCCL_ENQUEUE(comm, nc, ncclGroupEnd());
  return GMPI_SUCCESS;
}

/* Fused runs (core/plan_fuse.h) are not packed on cuda yet: each collective stays its own
 * NCCL call, a run's calls sharing one NCCL group (below), until packing is measured against that
 * on a GPU. The steps say so in gmpi_plan_dump. */
static void unfuse(struct gmpi_plan *plan) {
  for (int i = 0; i < plan->n_steps; i++) {
    gmpi_plan_step_t *st = &plan->steps[i];
    if (st->kind != PLAN_COLL || (st->run_len == 1 && st->fuse_why)) continue;
    st->run_len = 1;
    st->run_first = i;
    st->run_offset = 0;
    st->run_count = st->coll.count;
    st->fuse_why = "not packed on cuda yet (one NCCL group instead)";
  }
}

/* The run (core/plan_fuse.h) step i belongs to when that run holds more than one collective,
 * else -1. Core formed runs only of collectives no rank's buffers make dependent, so they may
 * share one NCCL group, whose collectives NCCL may run at once. */
static int run_of(const struct gmpi_plan *plan, int i) {
  const gmpi_plan_step_t *st = &plan->steps[i];
  if (st->kind != PLAN_COLL || plan->steps[st->run_first].run_len < 2) return -1;
  return cuda_coll_single_call(&st->coll) ? st->run_first : -1;
}

static gmpi_status_t group_start(gmpi_comm_t comm, ncclComm_t nc) {
  GMPI_NCCL_ENQUEUE(comm, nc, ncclGroupStart());
  return GMPI_SUCCESS;
}
static gmpi_status_t group_end(gmpi_comm_t comm, ncclComm_t nc) {
  GMPI_NCCL_ENQUEUE(comm, nc, ncclGroupEnd());
  return GMPI_SUCCESS;
}

/* Enqueue the whole plan on s (being captured). */
static gmpi_status_t capture_steps(gmpi_comm_t comm, struct gmpi_plan *plan, cudaStream_t s) {
  ncclComm_t nc = ((cuda_comm_t *)comm->be)->nccl;
  int *run = malloc(sizeof(int) * (size_t)(plan->n_steps ? plan->n_steps : 1));
  if (!run) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan's capture");
  for (int i = 0; i < plan->n_steps; i++)
    run[i] = run_of(plan, i);
  unfuse(plan);
  gmpi_status_t status = GMPI_SUCCESS;
  int in_group = 0, last_group = -1;
  for (int i = 0; i < plan->n_steps && status == GMPI_SUCCESS; i++) {
    gmpi_plan_step_t *st = &plan->steps[i];
    if (st->kind == PLAN_WAIT) {
      snprintf(st->lowered, sizeof(st->lowered), "(group end)");
      continue;
    }
    if (st->kind != PLAN_COLL) {
      if (st->group != last_group) status = capture_p2p_group(comm, plan, st->group, s);
      last_group = st->group;
      continue;
    }
    int grouped = run[i] >= 0 && i + 1 < plan->n_steps && run[i + 1] == run[i];
    if (grouped && !in_group) {
      status = group_start(comm, nc);
      in_group = status == GMPI_SUCCESS;
    }
    snprintf(st->lowered, sizeof(st->lowered), "%s%s", nccl_name[st->coll.kind],
             in_group ? " (grouped)" : "");
    if (status == GMPI_SUCCESS) status = cuda_coll_enqueue(comm, &st->coll, s);
    if (in_group && !grouped) {
      gmpi_status_t end = group_end(comm, nc);
      if (status == GMPI_SUCCESS) status = end;
      in_group = 0;
    }
  }
  if (in_group) {
    gmpi_status_t end = group_end(comm, nc);
    if (status == GMPI_SUCCESS) status = end;
  }
  free(run);
  return status;
}

static gmpi_status_t capture(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp) {
  cuda_comm_t *cc = comm->be;
  cudaStream_t s = cc->async_stream; /* a blocking stream's capture would break on stream 0 */
  GMPI_CHECK(presize_scratch(comm, plan));
  GMPI_CHECK(cuda_wait_stream(comm, s, "gmpi_plan_end"));
  GMPI_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  cc->capturing = 1;
  gmpi_status_t st = capture_steps(comm, plan, s);
  cc->capturing = 0;
  cudaError_t e = cudaStreamEndCapture(s, &cp->graph);
  if (st != GMPI_SUCCESS) goto destroy_graph;
  if (e != cudaSuccess) return gmpi_cuda_error(e, "cudaStreamEndCapture");
  GMPI_CUDA_CHECK_GOTO(cudaGraphInstantiate(&cp->exec, cp->graph, 0), st, destroy_graph);
  return GMPI_SUCCESS;
destroy_graph:
  if (cp->graph) cudaGraphDestroy(cp->graph);
  cp->graph = NULL;
  return st;
}

gmpi_status_t cuda_plan_lower(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                              void **lowered) {
  (void)state;
  cuda_plan_t *cp = calloc(1, sizeof(*cp));
  if (!cp) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan's lowering");
  gmpi_status_t st = capture(comm, plan, cp);
  if (st != GMPI_SUCCESS) {
    free(cp);
    return st;
  }
  *lowered = cp;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_plan_replay(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                               void *lowered) {
  (void)plan;
  cuda_comm_t *cc = state;
  cuda_plan_t *cp = lowered;
  if (!cp->exec) return GMPI_SUCCESS; /* an empty plan */
  GMPI_CHECK(cuda_order_blocking(cc));
  GMPI_CUDA_CHECK(cudaGraphLaunch(cp->exec, cuda_stream(cc)));
  if (cc->user_stream) return GMPI_SUCCESS;
  return cuda_wait_stream(comm, cc->stream, "a plan replay");
}

void cuda_plan_free(void *lowered) {
  cuda_plan_t *cp = lowered;
  if (!cp) return;
  if (cp->exec) cudaGraphExecDestroy(cp->exec);
  if (cp->graph) cudaGraphDestroy(cp->graph);
  free(cp);
}
