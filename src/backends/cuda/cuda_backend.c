/* SPDX-License-Identifier: BSD-3-Clause */
/* The cuda backend's life cycle: probe, bind one device per local rank, build each comm's
 * blocking NCCL communicator (gmpi_init's from a unique id the out-of-band channel carries, a
 * split's split from its parent's; each after a polled arrival, watched), teardown; and its
 * ops table. Completion and waiting are cuda_wait.c's. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/oob.h"
#include "../../core/progress.h"
#include "../../core/request.h"
#include "../../core/vote.h"
#include "../../core/watchdog.h"
#include "cuda.h"
#include "cuda_check.h"

/* ---- which device this rank gets ------------------------------------------------------ */

/* The device of local rank `local` given GMPI_VISIBLE_DEVICES, or -1 with the reason.
 * Without the variable local rank i takes device i, so two local ranks never share a GPU. With
 * it, local rank i takes entry i; an entry named more than once is the user's explicit request
 * to put several ranks on one GPU (NCCL then needs each such rank to claim its own host, e.g.
 * scripts/shared-gpu-rank), said at info level. More local ranks than entries is an error. */
static int pick_device(const gmpi_config_t *cfg, int local, int local_size, const char *host,
                       int say, char *why, size_t why_len) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    /* Without a GPU the runtime says "driver version is insufficient": say what it means. */
    int no_gpu = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || count == 0;
    snprintf(why, why_len, "%s (cudaGetDeviceCount: %s)",
             no_gpu ? "no GPU or no CUDA driver on this machine" : "the CUDA runtime failed",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    cudaGetLastError();
    return -1;
  }
  int visible[256] = {0}, n = 0;
  if (cfg->visible_devices[0]) {
    for (const char *p = cfg->visible_devices; *p && n < 256; p++) {
      visible[n++] = atoi(p);
      while (p[1] && *p != ',')
        p++;
    }
  } else {
    for (n = 0; n < count && n < 256; n++)
      visible[n] = n;
  }
  if (local_size > n) {
    snprintf(why, why_len,
             "host %s has %d local ranks but %d usable devices (%d visible to CUDA%s%s); "
             "gmpi puts two ranks on one GPU only when GMPI_VISIBLE_DEVICES names it twice",
             host, local_size, n, count, cfg->visible_devices[0] ? ", GMPI_VISIBLE_DEVICES=" : "",
             cfg->visible_devices);
    return -1;
  }
  if (visible[local] >= count) {
    snprintf(why, why_len, "GMPI_VISIBLE_DEVICES names device %d but %s has only %d",
             visible[local], host, count);
    return -1;
  }
  int sharing = 0; /* local ranks on our device (entries beyond local_size are unused) */
  for (int i = 0; i < local_size; i++)
    sharing += visible[i] == visible[local];
  if (sharing > 1 && say)
    gmpi_log(GMPI_LOG_INFO,
             "cuda: local rank %d shares device %d with %d other local rank(s) on %s, as "
             "GMPI_VISIBLE_DEVICES=%s asks (correct, not fast: NCCL needs each such rank to "
             "claim its own host, e.g. scripts/shared-gpu-rank)",
             local, visible[local], sharing - 1, host, cfg->visible_devices);
  return visible[local];
}

static gmpi_status_t cuda_probe(gmpi_comm_t comm, char *why, size_t why_len) {
  int dev =
      pick_device(&comm->cfg, comm->local_rank, comm->local_size, comm->host, 0, why, why_len);
  return dev < 0 ? GMPI_ERR_NO_DEVICE : GMPI_SUCCESS;
}

/* ---- ordering -------------------------------------------------------------------------- */

/* Has stream 0 unfinished work? */
static gmpi_status_t default_stream_pending(int *pending) {
  cudaError_t e = cudaStreamQuery(cudaStreamLegacy);
  *pending = e == cudaErrorNotReady;
  if (e == cudaSuccess || e == cudaErrorNotReady) return GMPI_SUCCESS;
  return gmpi_cuda_error(e, "cudaStreamQuery(cudaStreamLegacy)");
}

/* The public call (its serial) in which memops could not vouch for a buffer: each ordering of
 * that call takes the event -- gmpi_sendrecv's two posts both, whichever buffer was met first.
 * A buffer the driver refuses the attribute is unsure again at every call that classifies it.
 * A buffer that takes it only now is unsure once, and its event may be owed to a later call:
 * the drop-in asks whether a buffer is device memory (gmpi_mem_is_device, a call of its own)
 * before the operation that uses it. So each such buffer also owes one event to the thread's
 * next ordering. An event too many costs a microsecond once; one too few reads stale data. */
static _Thread_local unsigned long memops_unsure_call GMPI_TLS_HOT;
static _Thread_local unsigned memops_owed GMPI_TLS_HOT;

void cuda_memops_unsure(void) { memops_unsure_call = gmpi_call_ctx()->serial; }

void cuda_memops_owed(void) {
  cuda_memops_unsure();
  if (memops_owed < UINT_MAX) memops_owed++;
}

static int memops_wanted(void) {
  int owed = memops_owed > 0;
  if (owed) memops_owed--;
  return owed || memops_unsure_call == gmpi_call_ctx()->serial;
}

gmpi_status_t cuda_default_stream_wanted(cuda_comm_t *cc, int *wanted) {
  *wanted = 0;
  if (cc->user_stream) return GMPI_SUCCESS;
  switch (cc->default_stream_order) {
  case GMPI_STREAM_ORDER_NONE: return GMPI_SUCCESS;
  case GMPI_STREAM_ORDER_MEMOPS: *wanted = memops_wanted(); return GMPI_SUCCESS;
  case GMPI_STREAM_ORDER_PENDING: return default_stream_pending(wanted);
  default: *wanted = 1; return GMPI_SUCCESS;
  }
}

gmpi_status_t cuda_after_default_stream(cuda_comm_t *cc, cudaStream_t s) {
  int wanted;
  GMPI_CHECK(cuda_default_stream_wanted(cc, &wanted));
  /* a capture cannot wait on stream 0; other streams (another thread's point to point) can */
  if (!wanted || (s == cc->stream && atomic_load(&cc->capturing))) return GMPI_SUCCESS;
  GMPI_CUDA_CHECK(cudaEventRecord(cc->default_mark, cudaStreamLegacy));
  /* Recording first and querying the event, to skip the wait when stream 0 is idle, measured
   * worse on the H200 (1.17-1.25x raw NCCL per small allreduce against 1.04-1.14x for record +
   * wait); `pending` queries the stream instead, before any record, and measured worse too on
   * an H100 (1.15-1.20x against 1.09-1.15x for record + wait, 2026-12-05). A
   * blocking stream, which CUDA orders after stream 0 for nothing, measured 1.01-1.02x but makes
   * stream 0 wait for gmpi's pending work: cuda.h says why that deadlocks. */
  GMPI_CUDA_CHECK(cudaStreamWaitEvent(s, cc->default_mark, 0));
  return GMPI_SUCCESS;
}

/* ---- init, split, teardown -------------------------------------------------------------- */

/* A rank bound to one CPU shares it with NCCL's threads (they inherit the mask), and a rank that
 * polls its stream then starves them; said once per process, with the launcher's fix. */
static void warn_single_cpu(const gmpi_comm_t comm) {
  static atomic_int said;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) != 1) return;
  if (atomic_exchange(&said, 1)) return;
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
    cpu++;
  gmpi_log(GMPI_LOG_WARN,
           "cuda: rank %d may run on CPU %d only, and NCCL's threads share that CPU with it "
           "(Open MPI binds each rank to one core at two ranks or fewer); give each rank more "
           "cores, e.g. mpiexec --bind-to numa (or --bind-to none)",
           comm->rank, cpu);
}

/* One blocking communicator per comm: NCCL launches inline, with no thread per call (cuda_wait.c
 * says why). splitShare: the communicators of gmpi_comm_split and gmpi_comm_dup are split from
 * it and share its resources, so a new comm costs little device memory -- but NCCL forbids
 * issuing to communicators that share resources from two threads at once, and orders their
 * kernels one after another on the device, so two threads' collectives on two comms, issued in
 * different orders on two ranks, would wait for each other for ever. Under
 * MPI_THREAD_MULTIPLE (threads may call gmpi on different comms at once, gmpi.h) every comm
 * has resources of its own (docs/design.md, "Threads and NCCL"; a segfault inside
 * ncclAllReduce in test_threads at 2 ranks, H100). Under GMPI_CHECK too: communicators that
 * share resources share NCCL's abort flag, and the check fails a comm (a rank refused its
 * nonblocking collective after the others' had started) whose NCCL communicator must then be
 * aborted -- shared, that abort took its parent with it (the next ncclCommSplit of the world
 * failed with "internal error" in test_check at 2 ranks sharing an H200). GMPI_NCCL_SPLIT_SHARE=1
 * or 0 decides instead (1: a program granted MPI_THREAD_MULTIPLE that calls gmpi from one thread
 * at a time). */
static ncclConfig_t comm_config(const gmpi_comm_t comm) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.splitShare = comm->cfg.split_share >= 0
                          ? comm->cfg.split_share
                          : !comm->oob.ops->concurrent_threads() && !comm->cfg.check;
  return config;
}

static void log_memory(gmpi_comm_t comm, cuda_comm_t *cc, size_t free_before) {
  size_t free_after = 0, total = 0;
  cudaMemGetInfo(&free_after, &total);
  size_t bytes = free_before > free_after ? free_before - free_after : 0;
  gmpi_log(GMPI_LOG_INFO, "NCCL communicator of %d ranks took %.1f MiB of device %d", comm->size,
           (double)bytes / (1 << 20), cc->device);
}

/* gmpi_init's communicator, from a unique id that rank 0 makes and the out-of-band channel
 * carries. NCCL's blocking init waits inside NCCL for every rank: a polled, bounded arrival
 * first (a vote completes only when every rank has come), so that it waits only on ranks
 * already here; the call itself is watched, as every blocking NCCL call (cuda_wait.c). */
/* NCCL connects a communicator's peers at the first call of each algorithm (lazily), inside
 * that call, and the host waits there until every peer has made the same call. A peer that is
 * itself waiting for this rank's point-to-point progress -- blocked in a send whose receive this
 * rank posted before the collective, as MPI's progress rule allows -- never makes it, and this
 * rank, stuck inside NCCL, never drives the receive: neither moves (test_progress_shared on an
 * H100, twenty-first session: rank 1 inside ncclBroadcast, rank 0 in gmpi_send, until the
 * watchdog ended the job). Under GMPI_TIMEOUT_ACTION=status a stuck collective must also come
 * back as GMPI_ERR_TIMEOUT, which a wait inside NCCL cannot (test_timeout), and under
 * GMPI_CHECK a rank that refused its own call never connects (test_check). So every peer is
 * connected at init: about twice the device memory of a communicator (1092 MiB against 580 MiB
 * on an H200; a split or dup sharing its parent's resources adds little). NCCL reads the
 * variable once, at its first communicator: a program that made one before gmpi_init, or that
 * sets the variable itself (NCCL_RUNTIME_CONNECT=1 to save the memory), keeps its own choice. */
static void choose_connection(void) {
  if (getenv("NCCL_RUNTIME_CONNECT")) return;
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  gmpi_log(GMPI_LOG_INFO, "cuda: NCCL connects every peer at init (NCCL_RUNTIME_CONNECT=0), so "
                          "that no collective waits inside NCCL for a peer");
}

static gmpi_status_t nccl_init(gmpi_comm_t comm, cuda_comm_t *cc) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (comm->rank == 0) GMPI_NCCL_CHECK(ncclGetUniqueId(&id), NULL);
  GMPI_CHECK(comm->oob.ops->bcast(comm, &id, sizeof(id), 0));
  GMPI_CHECK(gmpi_vote(comm, GMPI_SUCCESS, 0, NULL, "arrive at gmpi_init's NCCL init"));
  ncclConfig_t config = comm_config(comm);
  size_t free_before = 0, total = 0;
  cudaMemGetInfo(&free_before, &total);
  choose_connection();
  gmpi_watchdog_add(comm); /* the comm is watched from here on: gmpi_init adds it for good */
  gmpi_watch_enter(&comm->watch, "gmpi_init's ncclCommInitRankConfig", 0);
  ncclResult_t r = ncclCommInitRankConfig(&cc->nccl, comm->size, id, comm->rank, &config);
  gmpi_watch_exit(&comm->watch);
  gmpi_watchdog_remove(comm);
  if (r != ncclSuccess) return gmpi_nccl_error(r, NULL, "ncclCommInitRankConfig");
  log_memory(comm, cc, free_before);
  return GMPI_SUCCESS;
}

/* A split or dup: split from the parent's communicator, which every rank of the parent calls
 * (a rank in no new comm with NCCL_SPLIT_NOCOLOR). gmpi_comm_split's out-of-band split came
 * first, polled, so every rank is inside this call; it is watched on the parent. */
static gmpi_status_t nccl_split(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_comm_t parent, int color,
                                int key) {
  cuda_comm_t *pc = parent->be;
  ncclConfig_t config = comm_config(parent);
  ncclComm_t child = NULL;
  size_t free_before = 0, total = 0;
  cudaMemGetInfo(&free_before, &total);
  cuda_nccl_enter(parent, "gmpi_comm_split's ncclCommSplit");
  ncclResult_t r = ncclCommSplit(pc->nccl, comm ? color : NCCL_SPLIT_NOCOLOR, key, &child, &config);
  cuda_nccl_exit(parent);
  if (r != ncclSuccess) return cuda_nccl_failed(parent, pc->nccl, r, "ncclCommSplit");
  if (!comm) return GMPI_SUCCESS;
  if (!child) return gmpi_error(GMPI_ERR_BACKEND, "ncclCommSplit returned no communicator");
  cc->nccl = child;
  log_memory(comm, cc, free_before);
  return GMPI_SUCCESS;
}

/* Healthy: finalized (its work is done) and destroyed. After a failure: aborted. */
static void nccl_destroy(gmpi_comm_t comm, cuda_comm_t *cc) {
  if (comm->failure != GMPI_SUCCESS) {
    cuda_abort(comm, cc, comm->failure);
    return;
  }
  if (cc->nccl && ncclCommFinalize(cc->nccl) == ncclSuccess) {
    ncclCommDestroy(cc->nccl);
    cc->nccl = NULL;
  }
  cuda_abort(comm, cc, GMPI_ERR_BACKEND); /* what did not finalize */
}

/* Under gmpi_init (parent NULL) this rank's device is picked; a split comm keeps its parent's.
 * A rank outside every new comm (GMPI_UNDEFINED: comm NULL) only takes part in NCCL's split. */
static gmpi_status_t cuda_comm_init(gmpi_comm_t comm, gmpi_comm_t parent, int color, int key) {
  if (!comm) return nccl_split(NULL, NULL, parent, color, key);
  char why[256] = "";
  int dev = parent ? ((cuda_comm_t *)parent->be)->device
                   : pick_device(&comm->cfg, comm->local_rank, comm->local_size, comm->host, 1, why,
                                 sizeof(why));
  if (dev < 0) return gmpi_error(GMPI_ERR_NO_DEVICE, "%s", why);
  if (!parent) warn_single_cpu(comm);
  cuda_comm_t *cc = calloc(1, sizeof(*cc));
  if (!cc) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the cuda backend state");
  cc->device = dev;
  pthread_mutex_init(&cc->events_lock, NULL);
  cc->default_stream_order = comm->cfg.default_stream_order;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK_GOTO(cudaSetDevice(dev), st, free_cc);
  GMPI_CHECK_GOTO(cuda_mem_setup(&comm->cfg, dev), st, free_cc);
  GMPI_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&cc->stream, cudaStreamNonBlocking), st,
                       teardown_mem);
  /* made here, not at first use: threads may share the comm */
  GMPI_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&cc->default_mark, cudaEventDisableTiming), st,
                       destroy_stream);
  GMPI_CHECK_GOTO(parent ? nccl_split(comm, cc, parent, color, key) : nccl_init(comm, cc), st,
                  abort_nccl);
  comm->be = cc;
  /* GMPI_CHECK: a rank that refused a comm's first collective made of sends and receives never
   * joins the vote that would connect its pairs (cuda_coll.c connect_pairs), and the others'
   * refusal must come back as GMPI_ERR_MISMATCH, not a wait: connect them all now, while every
   * rank is here. Watched, as every blocking NCCL call. */
  if (comm->cfg.check) {
    gmpi_watchdog_add(comm);
    st = cuda_connect_every_pair(comm, cc);
    gmpi_watchdog_remove(comm);
    if (st != GMPI_SUCCESS) goto abort_nccl;
  }
  gmpi_log(GMPI_LOG_INFO, "cuda: rank %d on device %d, NCCL communicator of %d ranks", comm->rank,
           dev, comm->size);
  return GMPI_SUCCESS;
abort_nccl:
  comm->be = NULL;
  cuda_abort(comm, cc, st);
  cudaEventDestroy(cc->default_mark);
destroy_stream:
  cudaStreamDestroy(cc->stream);
teardown_mem:
  cuda_mem_teardown();
free_cc:
  pthread_mutex_destroy(&cc->events_lock);
  free(cc);
  return st;
}

static void cuda_comm_fini(gmpi_comm_t comm) {
  cuda_comm_t *cc = comm->be;
  if (!cc) return;
  /* The mover (cc->p2p, its point-to-point links) was released before, by core, once every
   * rank had arrived at the free (src/api/init.c close_engines says why). */
  if (comm->failure == GMPI_SUCCESS) (void)cuda_wait_stream(comm, cc->stream, "the comm's free");
  /* gmpi_mem_alloc's registrations on this communicator go before it does */
  cuda_mem_release_comm(cc, comm->failure == GMPI_SUCCESS);
  nccl_destroy(comm, cc);
  cuda_comm_release_scratch(cc);
  cudaStreamDestroy(cc->stream);
  cuda_events_release(cc);
  free(cc->root_pairs_connected);
  pthread_mutex_destroy(&cc->events_lock);
  cudaEventDestroy(cc->default_mark);
  cuda_mem_teardown();
  free(cc);
  comm->be = NULL;
}

/* ---- the rest of the ops ------------------------------------------------------------------ */

static gmpi_status_t cuda_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  return cuda_mem_alloc(comm, bytes, ptr);
}
static gmpi_status_t cuda_free(gmpi_comm_t comm, void *ptr) {
  (void)comm;
  return cuda_mem_free(ptr);
}
/* On gmpi's stream, after what the program queued on stream 0 as GMPI_DEFAULT_STREAM_ORDER
 * says (the drop-in stages a buffer the program may have just memset), then waited. */
static gmpi_status_t cuda_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes) {
  cuda_comm_t *cc = comm->be;
  if (!bytes) return GMPI_SUCCESS;
  GMPI_CHECK(cuda_after_default_stream(cc, cc->stream));
  GMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cc->stream));
  return cuda_wait_stream(comm, cc->stream, "gmpi_mem_copy");
}

static gmpi_status_t cuda_query(gmpi_comm_t comm, gmpi_query_t what, void **out) {
  cuda_comm_t *cc = comm->be;
  switch (what) {
  case GMPI_QUERY_NCCL_COMM: *out = cc->nccl; break;
  case GMPI_QUERY_STREAM: *out = cuda_stream(cc); break;
  case GMPI_QUERY_DEVICE: *out = (void *)(intptr_t)cc->device; break;
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t cuda_set_stream(gmpi_comm_t comm, void *stream) {
  cuda_comm_t *cc = comm->be;
  if (stream == cc->user_stream) return GMPI_SUCCESS;
  /* Work gmpi queued on the stream it used so far (its own, or the previous user stream: an
   * average's divide, a plan's unpack) must not be overtaken by what comes after on the next
   * one. Ordered on the device: a host wait here would make the call wait for a pending
   * nonblocking collective -- for peers that may be waiting for this rank (found in review). */
  cudaStream_t from = cuda_stream(cc), to = stream ? (cudaStream_t)stream : cc->stream;
  cudaEvent_t mark;
  GMPI_CHECK(cuda_event_take(cc, &mark));
  cudaError_t e = cudaEventRecord(mark, from);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(to, mark, 0);
  cuda_event_give(cc, mark);
  if (e != cudaSuccess) {
    char what[96];
    snprintf(what, sizeof(what), "ordering argument 'stream' = %p after gmpi's earlier work",
             stream);
    return gmpi_cuda_error(e, what);
  }
  cc->user_stream = stream;
  return GMPI_SUCCESS;
}

/* gmpi's own device memory (scratch, and what NCCL took for the comm's p2p links) and the
 * user's; the main NCCL communicator's is logged at init. */
static void cuda_usage(gmpi_comm_t comm, size_t *library, size_t *user) {
  cuda_mem_usage(library, user);
  *library += cuda_p2p_device_bytes(comm->be);
}

static const char *cuda_lib_version(void) {
  static char text[32];
  int v = 0;
  ncclGetVersion(&v);
  snprintf(text, sizeof(text), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  return text;
}

static int cuda_stream_ordered(gmpi_comm_t comm) {
  return ((cuda_comm_t *)comm->be)->user_stream != NULL;
}
static gmpi_status_t cuda_host_fence(gmpi_comm_t comm) {
  cuda_comm_t *cc = comm->be;
  return cuda_wait_stream(comm, cc->user_stream, "the user's stream");
}

/* The device engine's collective half: NCCL on this comm's GPU. Its state is the comm's
 * cuda_comm_t, made by cuda_comm_init. (Its point-to-point half is core's, on cuda_mover_open's
 * mover.) */
static const gmpi_coll_engine_ops_t nccl_coll = {
    .name = "nccl",
    .run = cuda_coll,
    .start = cuda_coll_start,
    .test = cuda_coll_test,
    .abandon = cuda_coll_abandon,
    .plan_lower = cuda_plan_lower,
    .plan_replay = cuda_plan_replay,
    .plan_free = cuda_plan_free,
    .completes_alone = 1,
};

const gmpi_backend_ops_t gmpi_backend_cuda = {
    .name = "cuda",
    .kind = GMPI_BACKEND_CUDA,
    .lib_version = cuda_lib_version,
    .probe = cuda_probe,
    .comm_init = cuda_comm_init,
    .comm_fini = cuda_comm_fini,
    .mem_alloc = cuda_alloc,
    .mem_free = cuda_free,
    .mem_copy = cuda_copy,
    .classify = cuda_classify,
    .stream_ordered = cuda_stream_ordered,
    .host_fence = cuda_host_fence,
    .device_coll = &nccl_coll,
    .device_mover = cuda_mover_open,
    .query = cuda_query,
    .set_stream = cuda_set_stream,
    .mem_usage = cuda_usage,
};
