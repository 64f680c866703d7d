/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans on the cuda backend: the whole plan becomes one CUDA graph, captured once from gmpi's
 * stream. Each point-to-point group is one NCCL group on the comm's communicator (matching is
 * resolved, so no envelopes); a fusion run (core/plan_fuse.h: small collectives, independent
 * on every rank) is packed -- one kernel copies its k inputs into the plan's packed buffer, one
 * NCCL call runs on that in place, one kernel copies the results out -- or, where packing is
 * not chosen (pack_refusal), stays k NCCL calls sharing one NCCL group; the rest (fallback
 * kernels, copies) is captured as it is eagerly. A replay is one cudaGraphLaunch on the comm's
 * stream: blocking mode then waits for it (bounded), stream-ordered mode returns at once. Plans
 * on host buffers never come here (core routes them to the MPI engine: MPI calls cannot be
 * captured). */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/devpath.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/ops.h"
#include "../../core/plan.h"
#include "../../core/plan_fuse.h"
#include "cuda.h"
#include "cuda_check.h"
#include "cuda_pack.h"

/* The largest fused run packed unless GMPI_PLAN_PACK_BYTES says otherwise: all that core forms
 * (8 MiB, core/plan_fuse.h). The two copies cost a few microseconds at 8 MiB against one NCCL
 * call saved per collective; where the grouped calls win is for a device run to measure
 * (docs/performance.md); GMPI_PLAN_PACK_BYTES=0 gives the grouped form for comparison. */
#define GMPI_CUDA_PACK_BYTES ((size_t)8 << 20)

typedef struct {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  /* Packed runs: one buffer for all, as large as the largest (the graph runs them in order);
   * the slice table (cuda_pack.h) of every packed run's collectives, run after run, on the
   * device for the kernels and on the host while capturing. Allocated before the capture
   * (which cannot allocate), freed with the plan. */
  void *packed;
  size_t packed_bytes;
  gmpi_cuda_slice_t *slices, *host_slices;
  size_t n_slices, next_slice; /* next_slice: the next packed run's first, while capturing */
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

/* One point-to-point step of a group, its NCCL call (none for 0 bytes). */
static gmpi_status_t capture_p2p_step(gmpi_comm_t comm, ncclComm_t nc, gmpi_plan_step_t *st, int g,
                                      cudaStream_t s) {
  int send = st->kind == PLAN_SEND;
  snprintf(st->lowered, sizeof(st->lowered), "%s (NCCL group %d)", send ? "ncclSend" : "ncclRecv",
           g);
  return cuda_group_pair(comm, nc, st->peer, st->p2p.buf, send ? st->bytes : 0, st->p2p.buf,
                         send ? 0 : st->bytes, s);
}

/* The point-to-point steps of group g, as one NCCL group, ended also when a call in it failed
 * (NCCL refuses a call and stays healthy; an unended group would swallow every later call). */
static gmpi_status_t capture_p2p_group(gmpi_comm_t comm, struct gmpi_plan *plan, int g,
                                       cudaStream_t s) {
  ncclComm_t nc = ((cuda_comm_t *)comm->be)->nccl;
  GMPI_CHECK(cuda_group_start(comm, nc));
  gmpi_status_t status = GMPI_SUCCESS;
  for (int i = 0; i < plan->n_steps && status == GMPI_SUCCESS; i++) {
    gmpi_plan_step_t *st = &plan->steps[i];
    if (st->group != g || (st->kind != PLAN_SEND && st->kind != PLAN_RECV)) continue;
    status = capture_p2p_step(comm, nc, st, g, s);
  }
  return cuda_group_end(comm, nc, status);
}

/* Why the run that starts at step first stays separate NCCL calls, NULL when it is packed.
 * Every rank decides the same (the run, its dtype and op agree; GMPI_PLAN_PACK_BYTES must). */
static const char *pack_refusal(gmpi_comm_t comm, const gmpi_plan_step_t *first) {
  const gmpi_coll_args_t *a = &first->coll;
  if (gmpi_coll_has_op(a->kind) && gmpi_devpath_for(a->dtype, a->op).kind == GMPI_DEVPATH_GATHER)
    return "run not packed: NCCL lacks this dtype and op (gathered reductions, one by one)";
  gmpi_plan_rows_t rows = gmpi_plan_run_rows(first, comm->rank, comm->size);
  if (rows.pack_rows > GMPI_CUDA_PACK_MAX_ROWS || rows.unpack_rows > GMPI_CUDA_PACK_MAX_ROWS)
    return "run not packed: more ranks than one kernel launch copies rows for";
  size_t limit = comm->cfg.plan_pack_bytes;
  if (limit == GMPI_PLAN_PACK_BACKEND) limit = GMPI_CUDA_PACK_BYTES;
  if (gmpi_plan_run_bytes(first, comm->size) > limit)
    return "run not packed: over GMPI_PLAN_PACK_BYTES (one NCCL group, where one call each)";
  return NULL;
}

/* The run (core/plan_fuse.h) step i belongs to when that run holds more than one collective,
 * else -1. Core formed runs only of collectives no rank's buffers make dependent, so they may
 * share one NCCL group, whose collectives NCCL may run at once. */
static int run_of(const struct gmpi_plan *plan, int i) {
  const gmpi_plan_step_t *st = &plan->steps[i];
  if (st->kind != PLAN_COLL || plan->steps[st->run_first].run_len < 2) return -1;
  return cuda_coll_single_call(&st->coll) ? st->run_first : -1;
}

/* The slices of the run that starts at step first (core's, as the kernels read them),
 * appended to cp->host_slices. */
static void add_slices(gmpi_comm_t comm, const struct gmpi_plan *plan, int first, cuda_plan_t *cp) {
  gmpi_plan_slice_t got[GMPI_FUSE_MAX_STEPS];
  int n = gmpi_plan_run_slices(plan->steps, plan->n_steps, first, comm->rank, got);
  for (int j = 0; j < n; j++)
    cp->host_slices[cp->n_slices++] = (gmpi_cuda_slice_t){
        .in = got[j].in,
        .out = got[j].out,
        .offset = got[j].offset,
        .bytes = got[j].bytes,
    };
}

/* Decide each run's form. run[i], the run whose NCCL group step i shares (or -1), is set
 * first; then packed runs get their slices, the others are unfused, each member saying why. */
static gmpi_status_t plan_runs(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp,
                               int *run) {
  size_t slices = 0;
  for (int i = 0; i < plan->n_steps; i++) {
    run[i] = run_of(plan, i);
    const gmpi_plan_step_t *s = &plan->steps[i];
    if (s->kind == PLAN_COLL && s->run_len > 1) slices += (size_t)s->run_len;
  }
  if (slices && !(cp->host_slices = malloc(slices * sizeof(*cp->host_slices))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan's %zu-entry slice table", slices);
  for (int i = 0; i < plan->n_steps; i++) {
    gmpi_plan_step_t *s = &plan->steps[i];
    if (s->kind != PLAN_COLL || s->run_len < 2) continue;
    const char *why = pack_refusal(comm, s);
    if (why) {
      gmpi_plan_unfuse_run(plan->steps, plan->n_steps, i, why);
      continue;
    }
    size_t bytes = gmpi_plan_run_bytes(s, comm->size);
    cp->packed_bytes = bytes > cp->packed_bytes ? bytes : cp->packed_bytes;
    add_slices(comm, plan, i, cp);
  }
  return GMPI_SUCCESS;
}

/* The packed buffer and the device slice table, before the capture. The table is copied on
 * the comm's stream, which capture() waits for before it begins: a cudaMemcpy from pageable
 * memory may return before its DMA has landed, and nothing would order it before a replay on
 * a user's stream (or with GMPI_DEFAULT_STREAM_ORDER=0). */
static gmpi_status_t alloc_packing(gmpi_comm_t comm, cuda_plan_t *cp) {
  if (!cp->n_slices) return GMPI_SUCCESS;
  size_t table = cp->n_slices * sizeof(*cp->slices);
  GMPI_CHECK(cuda_lib_alloc(cp->packed_bytes, &cp->packed));
  GMPI_CHECK(cuda_lib_alloc(table, (void **)&cp->slices));
  GMPI_CUDA_CHECK(cudaMemcpyAsync(cp->slices, cp->host_slices, table, cudaMemcpyHostToDevice,
                                  ((cuda_comm_t *)comm->be)->stream));
  return GMPI_SUCCESS;
}

/* One kernel over the run's k slices from first (rows: the run's layout): pack (unpack 0) or
 * unpack; none when no slice copies in that direction (a bcast's root unpacks nothing, the
 * others pack nothing). */
static gmpi_status_t launch_pack(const cuda_plan_t *cp, size_t first, int k,
                                 const gmpi_plan_rows_t *rows, int unpack, cudaStream_t s) {
  size_t largest = 0;
  for (int j = 0; j < k; j++) {
    const gmpi_cuda_slice_t *sl = &cp->host_slices[first + (size_t)j];
    size_t b = (unpack ? sl->out != NULL : sl->in != NULL) ? sl->bytes : 0;
    largest = b > largest ? b : largest;
  }
  if (!largest) return GMPI_SUCCESS;
  gmpi_cuda_rows_t r = {rows->row_bytes, unpack ? rows->unpack_rows : rows->pack_rows,
                        unpack ? rows->unpack_row : rows->pack_row};
  cudaError_t e = gmpi_cuda_pack(cp->slices + first, k, r, largest, cp->packed, unpack, s);
  return e == cudaSuccess ? GMPI_SUCCESS : gmpi_cuda_error(e, "gmpi_cuda_pack");
}

/* The packed run that starts at step i: pack, one collective in place, unpack. */
static gmpi_status_t capture_packed(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp,
                                    int i, cudaStream_t s) {
  gmpi_plan_step_t *f = &plan->steps[i];
  size_t first = cp->next_slice;
  cp->next_slice += (size_t)f->run_len;
  gmpi_plan_rows_t rows = gmpi_plan_run_rows(f, comm->rank, comm->size);
  snprintf(f->lowered, sizeof(f->lowered), "%s (%d fused, packed, %zu B)", nccl_name[f->coll.kind],
           f->run_len, gmpi_plan_run_bytes(f, comm->size));
  GMPI_CHECK(launch_pack(cp, first, f->run_len, &rows, 0, s));
  gmpi_coll_args_t fused = gmpi_plan_fused_args(f, cp->packed);
  GMPI_CHECK(cuda_coll_enqueue(comm, &fused, s));
  return launch_pack(cp, first, f->run_len, &rows, 1, s);
}

/* Collective step i: a packed run's first (the whole run), a later member of one (nothing), or
 * one NCCL call, opening or closing its run's NCCL group (*in_group) around it. */
static gmpi_status_t capture_coll(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp,
                                  const int *run, int i, cudaStream_t s, int *in_group) {
  gmpi_plan_step_t *st = &plan->steps[i];
  if (st->run_len > 1) return capture_packed(comm, plan, cp, i, s);
  if (st->run_len == 0) {
    snprintf(st->lowered, sizeof(st->lowered), "(packed into step %d's call)", st->run_first);
    return GMPI_SUCCESS;
  }
  ncclComm_t nc = ((cuda_comm_t *)comm->be)->nccl;
  int grouped = run[i] >= 0 && i + 1 < plan->n_steps && run[i + 1] == run[i];
  if (grouped && !*in_group) {
    GMPI_CHECK(cuda_group_start(comm, nc));
    *in_group = 1;
  }
  snprintf(st->lowered, sizeof(st->lowered), "%s%s", nccl_name[st->coll.kind],
           *in_group ? " (grouped)" : "");
  gmpi_status_t status = cuda_coll_enqueue(comm, &st->coll, s);
  if (*in_group && (!grouped || status != GMPI_SUCCESS)) {
    status = cuda_group_end(comm, nc, status);
    *in_group = 0;
  }
  return status;
}

/* Enqueue the whole plan on s (being captured). */
static gmpi_status_t capture_steps(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp,
                                   const int *run, cudaStream_t s) {
  gmpi_status_t status = GMPI_SUCCESS;
  int in_group = 0, last_group = -1;
  for (int i = 0; i < plan->n_steps && status == GMPI_SUCCESS; i++) {
    gmpi_plan_step_t *st = &plan->steps[i];
    if (st->kind == PLAN_WAIT) {
      snprintf(st->lowered, sizeof(st->lowered), "(group end)");
    } else if (st->kind == PLAN_COLL) {
      status = capture_coll(comm, plan, cp, run, i, s, &in_group);
    } else {
      if (st->group != last_group) status = capture_p2p_group(comm, plan, st->group, s);
      last_group = st->group;
    }
  }
  if (in_group) /* only a step that failed can leave one open */
    status = cuda_group_end(comm, ((cuda_comm_t *)comm->be)->nccl, status);
  return status;
}

static gmpi_status_t capture(gmpi_comm_t comm, struct gmpi_plan *plan, cuda_plan_t *cp,
                             const int *run) {
  cuda_comm_t *cc = comm->be;
  cudaStream_t s = cc->stream;
  GMPI_CHECK(presize_scratch(comm, plan));
  GMPI_CHECK(cuda_wait_stream(comm, s, "gmpi_plan_end"));
  GMPI_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  atomic_store(&cc->capturing, 1);
  gmpi_status_t st = capture_steps(comm, plan, cp, run, s);
  atomic_store(&cc->capturing, 0);
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
  int *run = malloc(sizeof(int) * (size_t)(plan->n_steps ? plan->n_steps : 1));
  gmpi_status_t st = GMPI_SUCCESS;
  if (!cp || !run) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan's lowering");
    goto free_lowering;
  }
  GMPI_CHECK_GOTO(plan_runs(comm, plan, cp, run), st, free_lowering);
  GMPI_CHECK_GOTO(alloc_packing(comm, cp), st, free_lowering);
  GMPI_CHECK_GOTO(capture(comm, plan, cp, run), st, free_lowering);
  free(run);
  *lowered = cp;
  return GMPI_SUCCESS;
free_lowering:
  free(run);
  cuda_plan_free(cp);
  return st;
}

gmpi_status_t cuda_plan_replay(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                               void *lowered) {
  (void)plan;
  cuda_comm_t *cc = state;
  cuda_plan_t *cp = lowered;
  if (!cp->exec) return GMPI_SUCCESS; /* an empty plan */
  /* A replay classifies no buffer, so under memops nothing says whether its buffers took
   * SYNC_MEMOPS: one event per replay, as under 1 (cuda_default_stream_wanted). */
  if (cc->default_stream_order == GMPI_STREAM_ORDER_MEMOPS) cuda_memops_unsure();
  GMPI_CHECK(cuda_after_default_stream(cc, cuda_stream(cc)));
  GMPI_CUDA_CHECK(cudaGraphLaunch(cp->exec, cuda_stream(cc)));
  if (cc->user_stream) return GMPI_SUCCESS;
  return cuda_wait_stream(comm, cc->stream, "a plan replay");
}

void cuda_plan_free(void *lowered) {
  cuda_plan_t *cp = lowered;
  if (!cp) return;
  if (cp->exec) cudaGraphExecDestroy(cp->exec);
  if (cp->graph) cudaGraphDestroy(cp->graph);
  cuda_lib_free(cp->packed, cp->packed_bytes);
  cuda_lib_free(cp->slices, cp->n_slices * sizeof(*cp->slices));
  free(cp->host_slices);
  free(cp);
}
