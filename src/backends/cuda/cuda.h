/* SPDX-License-Identifier: BSD-3-Clause */
/* The cuda backend: one GPU per rank, NCCL for collectives and plans on device buffers (the
 * device engine's collective half, nccl_coll), and the data mover core builds device point to
 * point on (cuda_p2p.h: eager copies, CUDA IPC pulls, NCCL links). Host buffers never come
 * here: core routes them to the host engine. */
#ifndef GMPI_CUDA_H
#define GMPI_CUDA_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../../core/backend.h"
#include "../../core/wait.h"

struct cuda_p2p;
struct gmpi_plan;

/* Events a comm keeps for its next nonblocking calls: creating and destroying one per call
 * costs more than the call's own bookkeeping. */
#define CUDA_SPARE_EVENTS 16
/* Outgrown scratch blocks a comm keeps (scratch grows by powers of two from 4 KiB to
 * GMPI_CUDA_SCRATCH_BYTES: 14 sizes at most). */
#define CUDA_RETIRED_SCRATCH 16

/* Each comm has one blocking NCCL communicator (cuda_wait.c says why); those of split and
 * dup'ed comms are split from their parent's and share its resources (NCCL's splitShare). */
typedef struct {
  int device;
  ncclComm_t nccl;              /* blocking: collectives, plans, stream mode */
  atomic_int inside_nccl;       /* threads inside a data-path NCCL call: no abort while any are */
  atomic_uint unfinished_tests; /* nonblocking collectives tested unfinished: NCCL's error is
                                   asked at one in 16 (cuda_coll_test) */
  cudaStream_t stream;      /* gmpi's own stream for this comm: a non-blocking one (see below) */
  cudaStream_t user_stream; /* stream-ordered mode when set */
  cudaEvent_t default_mark; /* where the legacy default stream was (see below) */
  gmpi_stream_order_t default_stream_order; /* GMPI_DEFAULT_STREAM_ORDER (core/config.h) */
  struct cuda_p2p *p2p; /* the comm's data mover (owned by core's envelope engine), or NULL */
  atomic_int capturing; /* a plan is being captured from stream: touch nothing else */
  void *scratch;        /* fallback reductions' gather space, per comm (per stream) */
  size_t scratch_bytes;
  void *retired[CUDA_RETIRED_SCRATCH]; /* outgrown scratch, kept: captured plans point into it */
  size_t retired_bytes[CUDA_RETIRED_SCRATCH];
  int n_retired;
  /* NCCL's point-to-point channels, connected before a comm's first collective made of sends
   * and receives (cuda_coll.c connect_pairs): every pair, or each root's pairs (n flags, made
   * at the first rooted one). Collectives of a comm run one at a time: no lock. */
  int pairs_connected;
  unsigned char *root_pairs_connected;
  pthread_mutex_t events_lock;                 /* guards the spare events (threads share a comm) */
  cudaEvent_t spare_events[CUDA_SPARE_EVENTS]; /* completed requests' events, kept for reuse */
  int n_spare_events;
} cuda_comm_t;

extern const gmpi_backend_ops_t gmpi_backend_cuda;

/* The stream operations are enqueued on: the user's in stream-ordered mode, else gmpi's. */
static inline cudaStream_t cuda_stream(const cuda_comm_t *cc) {
  return cc->user_stream ? cc->user_stream : cc->stream;
}

/* ---- where a buffer lives (cuda_mem.c): the backend's classify op ---- */
/* Classify ptr for this rank's device; another GPU's memory is GMPI_ERR_INVALID_ARG naming
 * arg. NULL is GMPI_MEM_NONE. */
gmpi_status_t cuda_classify(gmpi_comm_t comm, const void *ptr, const char *arg,
                            gmpi_mem_kind_t *kind);

/* ---- device memory (cuda_mem.c): one budget per process, shared by its comms ---- */
/* The allocation that holds p (the driver's cuMemGetAddressRange): 1 and its base and size,
 * or 0 when the driver does not say. */
int cuda_alloc_range(const void *p, uintptr_t *base, size_t *size);
gmpi_status_t cuda_mem_setup(const gmpi_config_t *cfg, int device);
void cuda_mem_teardown(void);
/* gmpi_mem_alloc on comm, with its GMPI_NCCL_MEM: collective over comm under "window". */
gmpi_status_t cuda_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr);
gmpi_status_t cuda_mem_free(void *ptr);
/* Before cc's NCCL communicator is destroyed: undo the registrations of blocks allocated on it
 * (healthy 0: the comm failed, its communicator's abort drops them; NCCL is not called). The
 * blocks stay allocated, as plain device memory, until gmpi_mem_free. */
void cuda_mem_release_comm(cuda_comm_t *cc, int healthy);
/* Library-owned device memory (staging, fallback scratch), counted separately. */
gmpi_status_t cuda_lib_alloc(size_t bytes, void **ptr);
void cuda_lib_free(void *ptr, size_t bytes);
void cuda_mem_usage(size_t *library, size_t *user);
/* The comm's scratch for fallback reductions, at most GMPI_CUDA_SCRATCH_BYTES, grown on
 * demand (library memory). */
gmpi_status_t cuda_comm_scratch(cuda_comm_t *cc, size_t bytes, void **ptr);
/* Connect NCCL's point-to-point channels between every pair of comm's ranks now (one byte each
 * way), as a comm's first collective made of sends and receives otherwise does after a vote
 * (cuda_coll.c connect_pairs). Collective; GMPI_CHECK's comms do it when built. */
gmpi_status_t cuda_connect_every_pair(gmpi_comm_t comm, cuda_comm_t *cc);
void cuda_comm_release_scratch(cuda_comm_t *cc);
#define GMPI_CUDA_SCRATCH_BYTES ((size_t)32 << 20)

/* ---- completion (cuda_wait.c) ---- */
/* Wait until everything enqueued on stream is done, polling NCCL errors, keeping MPI and the
 * envelope engine progressing, bounded by GMPI_TIMEOUT: then the job ends (action end) or the
 * NCCL communicator is aborted and GMPI_ERR_TIMEOUT returned (action status). */
gmpi_status_t cuda_wait_stream(gmpi_comm_t comm, cudaStream_t stream, const char *what);
/* NCCL's asynchronous error, if any (then the NCCL comm is aborted and the comm failed). */
gmpi_status_t cuda_poll_errors(gmpi_comm_t comm, cuda_comm_t *cc);
/* An event for one request's completion (a spare one if the comm has it), and back. */
gmpi_status_t cuda_event_take(cuda_comm_t *cc, cudaEvent_t *ev);
void cuda_event_give(cuda_comm_t *cc, cudaEvent_t ev);
/* Destroy the spare events (the comm's free). */
void cuda_events_release(cuda_comm_t *cc);
/* Teardown: has everything on s finished within timeout_s (0: no bound)? Polls without driving
 * gmpi's engines (they are being closed); a stream that did not drain holds work a lost peer
 * will never complete, which the caller then aborts. */
int cuda_stream_drained(cudaStream_t s, double timeout_s);
/* Abort the comm's NCCL communicators (work that can never complete), failing comm with why. */
void cuda_abort(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why);

/* ---- ordering (cuda_backend.c) ---- */
/* gmpi's device work runs after the work the program queued on the legacy default stream.
 * cudaMemcpy from pageable memory returns before its copy has landed, and kernels on stream 0
 * run after their launch returns: a program that passes such a buffer to an MPI-style call
 * expects to send what it wrote (found by mpi_bench on the H200: allreduce read stale
 * elements). An event recorded on stream 0 and waited by gmpi's stream s (on the device; the
 * host goes on) costs 0.5-0.9 us a call on the H200. A stream created blocking gets the same
 * order from CUDA for nothing (1.01-1.02x raw NCCL per small collective against 1.07-1.12x),
 * but CUDA then also makes stream 0's later work wait for everything pending on it: a
 * synchronous cudaMemcpy before gmpi_wait, another thread's stream-0 work during a blocking
 * call, and gmpi's own event on stream 0 when its progress serves a peer's rendezvous during a
 * blocking collective would all wait for peers that may be waiting for this rank -- deadlocks
 * of valid programs (docs/design.md). So gmpi's streams stay non-blocking. Nothing in
 * stream-ordered mode (the user's stream orders it), while a plan is captured, or under
 * GMPI_DEFAULT_STREAM_ORDER=0 (the program promises what CUDA-aware MPI asks: its buffers are
 * ready when it calls). GMPI_DEFAULT_STREAM_ORDER=pending asks the driver first whether stream
 * 0 still has unfinished work (cudaStreamQuery, no event recorded) and orders only then: work
 * the calling thread queued there before the call is either finished or still pending, so the
 * answer is exact for it. Measured on an H100 it costs more than the event it saves (docs/
 * performance.md), so it stays opt-in. */
gmpi_status_t cuda_after_default_stream(cuda_comm_t *cc, cudaStream_t s);
/* Whether this call orders after stream 0 (outside stream-ordered mode), by
 * GMPI_DEFAULT_STREAM_ORDER: 0 never, 1 always, pending when stream 0 has unfinished work,
 * memops only when one of the call's device buffers could not be given SYNC_MEMOPS
 * (cuda_memops_unsure during the same public call, or an event still owed from an earlier
 * one). */
gmpi_status_t cuda_default_stream_wanted(cuda_comm_t *cc, int *wanted);
/* GMPI_DEFAULT_STREAM_ORDER=memops, CUDA-aware MPI's rule (Open MPI's and MVAPICH's CUDA
 * support do the same): every device buffer gmpi is handed gets the driver's
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, which makes the program's cudaMemcpy and cudaMemset into it
 * return only once they are done -- the two calls that otherwise return with the copy still in
 * flight (a copy from pageable memory, a memset of device memory) -- so nothing is left on
 * stream 0 for gmpi to wait for. Work the program queued itself (kernels, *Async calls) must be
 * finished before the call, as every CUDA-aware MPI asks. A buffer the driver refuses the
 * attribute (managed memory, a VMM block that does not take it) calls cuda_memops_unsure, and
 * every ordering of that public call is after stream 0 with the event; so is point to point when
 * matching across kinds (not classified) and a plan's replay. One it is set on only now (earlier
 * copies were not synchronous) calls cuda_memops_owed: the same, and one event owed to the
 * thread's next ordering, whichever call makes it. Per thread: one call classifies its buffers
 * and orders, on one thread. */
void cuda_memops_unsure(void);
void cuda_memops_owed(void);

/* ---- collectives (cuda_coll.c) and fallback kernels (cuda_kernels.cu) ---- */
/* NCCL groups of sends and receives. A group is ended whatever became of the calls in it:
 * NCCL refuses a bad call and stays healthy, and a group left open would swallow every later
 * NCCL call of this thread. cuda_group_end returns status when it is an error (the first
 * error), else the end's own. cuda_group_pair: the send and the receive with one peer (none
 * for 0 bytes). */
gmpi_status_t cuda_group_start(gmpi_comm_t comm, ncclComm_t nc);
gmpi_status_t cuda_group_end(gmpi_comm_t comm, ncclComm_t nc, gmpi_status_t status);
gmpi_status_t cuda_group_pair(gmpi_comm_t comm, ncclComm_t nc, int peer, const void *send,
                              size_t send_bytes, void *recv, size_t recv_bytes, cudaStream_t s);
/* A collective on device buffers (or none, in stream-ordered mode): run, or enqueue. */
gmpi_status_t cuda_coll(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a);
/* Enqueue a device collective on stream s, nothing else (plans capture this). */
gmpi_status_t cuda_coll_enqueue(gmpi_comm_t comm, const gmpi_coll_args_t *a, cudaStream_t s);
/* Nonblocking collectives: enqueued on the comm's stream, completed by an event after them. */
gmpi_status_t cuda_coll_start(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a,
                              gmpi_request_t req);
gmpi_status_t cuda_coll_test(void *state, gmpi_request_t req, int *done);
void cuda_coll_abandon(void *state, gmpi_request_t req);
/* 1 when it is one NCCL call whatever the buffers, so it may share an NCCL group. */
int cuda_coll_single_call(const gmpi_coll_args_t *a);
/* Scratch bytes the collective needs (sized before a graph capture, which cannot allocate). */
size_t cuda_coll_scratch_need(gmpi_comm_t comm, const gmpi_coll_args_t *a);
/* out[i] = op over r of in[r*count + i] for r < nranks (AVG: sum, divided when divide). */
cudaError_t gmpi_cuda_reduce_ranks(int dtype, int op, const void *in, void *out, size_t count,
                                   int nranks, int divide, cudaStream_t stream);
/* buf[i] /= divisor: AVG after an NCCL sum (C's truncating division for integers; 16-bit
 * floats divide in float32 and round once; float, double and complex as themselves). */
cudaError_t gmpi_cuda_divide(int dtype, void *buf, size_t count, int divisor, cudaStream_t stream);

/* ---- the data mover (cuda_p2p.c) ---- */
/* The backend's device_mover op: the comm's mover (collective; comm->be is set), handed to
 * core, whose envelope engine owns *ctx from then on. */
gmpi_status_t cuda_mover_open(gmpi_comm_t comm, const gmpi_mover_t **mover, void **ctx);
/* Device memory NCCL took for the comm's links (measured at each link's set-up). */
size_t cuda_p2p_device_bytes(const cuda_comm_t *cc);

/* ---- plans (cuda_plan.c): one CUDA graph per plan on device buffers ---- */
gmpi_status_t cuda_plan_lower(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                              void **lowered);
gmpi_status_t cuda_plan_replay(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                               void *lowered);
void cuda_plan_free(void *lowered);

#endif
