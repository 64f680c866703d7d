/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gmpi: MPI semantics on GPUs, with NCCL moving device data and MPI moving host data.
 *
 * One header. Every call returns a gmpi_status_t; out-parameters come last and are
 * written on success; on failure only where a call says so, as MPI's do (a receive's status
 * on GMPI_ERR_TRUNCATE, gmpi_msg_status_t; each request's in a wait on many). On failure
 * gmpi_last_error() tells, for the calling thread, which function failed, on which rank, and which
 * argument or value was wrong.
 *
 * Threads (MPI's rule). When MPI provides MPI_THREAD_MULTIPLE (start MPI yourself with
 * MPI_Init_thread before gmpi_init; gmpi starts it at MPI_THREAD_SERIALIZED otherwise),
 * threads may call gmpi at the same time on different communicators, on every backend and
 * point-to-point engine: each engine's state is under its own lock, and a wait of one thread
 * that drives the other comms' engines only tries those locks. Calls on one communicator
 * (and on its requests and plans) must not overlap: one thread at a time, as for an MPI
 * communicator under MPI_THREAD_SERIALIZED. Requests may be waited on another thread than
 * the one that started them, one thread at a time. gmpi_init, gmpi_comm_split, gmpi_comm_dup,
 * gmpi_comm_free and gmpi_finalize are collective over their parent: the threads of one
 * process must not call them concurrently on comms sharing ranks in different orders (MPI's
 * rule for collectives). Tested under -fsanitize=thread (tests/test_threads.c). On cuda a
 * thread other than gmpi_init's makes the rank's device current (cudaSetDevice with
 * gmpi_comm_device's answer) before it calls gmpi: gmpi allocates and creates events on the
 * calling thread's current device, and does not change it behind the program's back.
 */
#ifndef GMPI_H
#define GMPI_H

/* Keep the MPI C++ bindings out of C++ includers: gmpi needs only the C API,
 * and Open MPI's bindings otherwise demand libmpi_cxx at link time. */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API: the library is built with hidden visibility, so these are the only
 * symbols libgmpi exports. */
#if defined(__GNUC__) || defined(__clang__)
#define GMPI_API __attribute__((visibility("default")))
#else
#define GMPI_API
#endif

/* GMPI_VERSION_MAJOR, _MINOR, _PATCH, _STRING: generated from the project's version. */
#include "gmpi_version.h"

/* What every call returns. The text of each: gmpi_strerror; its name: gmpi_status_name. */
typedef enum {
  GMPI_SUCCESS = 0,
  GMPI_ERR_INVALID_ARG = 1, /* an argument is wrong: gmpi_last_error() names it */
  GMPI_ERR_UNSUPPORTED = 2, /* not supported on this backend or buffer */
  GMPI_ERR_NO_DEVICE = 3,   /* no usable device for the requested backend */
  GMPI_ERR_NO_MEMORY = 4,   /* out of memory or over the memory budget */
  GMPI_ERR_TRUNCATE = 5,    /* message longer than the receive buffer */
  GMPI_ERR_MISMATCH = 6,    /* ranks disagree on an operation (GMPI_CHECK) */
  GMPI_ERR_TIMEOUT = 7,     /* did not complete within GMPI_TIMEOUT */
  GMPI_ERR_STATE = 8,       /* communicator or object in a state that forbids this call */
  GMPI_ERR_MPI = 9,         /* an MPI call failed */
  GMPI_ERR_BACKEND = 10,    /* a CUDA or NCCL call failed */
  GMPI_ERR_INTERNAL = 11    /* internal error in gmpi */
} gmpi_status_t;

/* Short text for a status (with a hint at GMPI_DEBUG=info where the log says more). Never NULL. */
GMPI_API const char *gmpi_strerror(gmpi_status_t status);
/* The status's name as written here ("GMPI_ERR_TIMEOUT"); "GMPI_?" for a value that is none. */
GMPI_API const char *gmpi_status_name(gmpi_status_t status);
/* Detail of this thread's last failure: function, argument, value, rank. "" if none. */
GMPI_API const char *gmpi_last_error(void);

/* Opaque handles. */
typedef struct gmpi_comm *gmpi_comm_t;
typedef struct gmpi_request *gmpi_request_t;
typedef struct gmpi_plan *gmpi_plan_t;

#define GMPI_ANY_SOURCE (-1)
#define GMPI_ANY_TAG    (-1)
/* Color for gmpi_comm_split: this rank joins no new communicator (*newcomm = NULL). Also the
 * index gmpi_waitany/gmpi_testany report when every request is NULL. */
#define GMPI_UNDEFINED (-32766)
/* A peer that is no one: a send or receive with it completes at once; a receive reports source
 * GMPI_PROC_NULL, tag GMPI_ANY_TAG, count 0. A probe of it finds that empty message. */
#define GMPI_PROC_NULL (-2)

typedef enum {
  GMPI_INT8 = 0,
  GMPI_UINT8,
  GMPI_INT16,
  GMPI_UINT16,
  GMPI_INT32,
  GMPI_UINT32,
  GMPI_INT64,
  GMPI_UINT64,
  GMPI_FLOAT16,
  GMPI_BFLOAT16,
  GMPI_FLOAT32,
  GMPI_FLOAT64,
  GMPI_COMPLEX64,  /* two float32: re, im */
  GMPI_COMPLEX128, /* two float64: re, im */
  GMPI_BOOL,       /* one byte, 0 or not 0 */
  GMPI_BYTE,
  GMPI_DTYPE_COUNT
} gmpi_dtype_t;

typedef enum {
  GMPI_SUM = 0,
  GMPI_PROD,
  GMPI_MIN,
  GMPI_MAX,
  GMPI_AVG, /* sum divided by the number of ranks; integers divide as C does (truncation) */
  GMPI_BAND,
  GMPI_BOR,
  GMPI_BXOR,
  GMPI_LAND,
  GMPI_LOR,
  GMPI_LXOR,
  GMPI_OP_COUNT
} gmpi_op_t;

typedef enum { GMPI_BACKEND_CPU = 0, GMPI_BACKEND_CUDA = 1 } gmpi_backend_t;

/* Size in bytes of one element; 0 for an invalid dtype. */
GMPI_API size_t gmpi_dtype_size(gmpi_dtype_t dtype);
/* Name of a dtype or op ("float32", "sum"); "invalid" when out of range. */
GMPI_API const char *gmpi_dtype_name(gmpi_dtype_t dtype);
GMPI_API const char *gmpi_op_name(gmpi_op_t op);
/* 1 when op may reduce dtype (the rules of MPI, plus AVG on integer and floating types). */
GMPI_API int gmpi_op_valid(gmpi_dtype_t dtype, gmpi_op_t op);

/* A receive's status: written on success, and on GMPI_ERR_TRUNCATE with the overflowing
 * message's source and tag and count 0 (the buffer's contents are then undefined). */
typedef struct {
  int source;   /* rank the message came from */
  int tag;      /* its tag */
  size_t count; /* elements received */
} gmpi_msg_status_t;

/* ---- life cycle -------------------------------------------------------------------- */
/* Collective over mpi_comm. Reads GMPI_* variables, picks the backend, binds a GPU.
 * Calls MPI_Init_thread when MPI is not initialised (and MPI_Finalize in gmpi_finalize). */
GMPI_API gmpi_status_t gmpi_init(MPI_Comm mpi_comm, gmpi_comm_t *comm);
/* ---- for bindings (Python ctypes/cffi): no MPI handle, names instead of enum values ---- */
/* gmpi_init on MPI_COMM_WORLD. */
GMPI_API gmpi_status_t gmpi_init_world(gmpi_comm_t *comm);
/* The dtype or op of a name as gmpi_dtype_name / gmpi_op_name print it ("float32", "sum").
 * An unknown name is GMPI_ERR_INVALID_ARG. */
GMPI_API gmpi_status_t gmpi_dtype_from_name(const char *name, gmpi_dtype_t *dtype);
GMPI_API gmpi_status_t gmpi_op_from_name(const char *name, gmpi_op_t *op);
/* ---- end of the bindings' helpers ---- */
/* Collective. NULL-safe; sets *comm to NULL. Works after a timeout or failure. */
GMPI_API gmpi_status_t gmpi_finalize(gmpi_comm_t *comm);
/* Collective. color GMPI_UNDEFINED gives *newcomm = NULL. Free the result with gmpi_comm_free. */
GMPI_API gmpi_status_t gmpi_comm_split(gmpi_comm_t comm, int color, int key, gmpi_comm_t *newcomm);
/* Collective. A new comm with comm's group, ranks and backend, whose messages and collectives
 * never match comm's. Free it with gmpi_comm_free. */
GMPI_API gmpi_status_t gmpi_comm_dup(gmpi_comm_t comm, gmpi_comm_t *newcomm);
/* Collective over *comm, a result of gmpi_comm_split or gmpi_comm_dup; sets *comm to NULL.
 * NULL-safe. The comm of gmpi_init is ended with gmpi_finalize instead. */
GMPI_API gmpi_status_t gmpi_comm_free(gmpi_comm_t *comm);
GMPI_API gmpi_status_t gmpi_comm_rank(gmpi_comm_t comm, int *rank);
GMPI_API gmpi_status_t gmpi_comm_size(gmpi_comm_t comm, int *size);
GMPI_API gmpi_status_t gmpi_comm_backend(gmpi_comm_t comm, gmpi_backend_t *backend);
/* Why gmpi_init chose this backend: "GMPI_BACKEND=cuda", or under auto the backends passed
 * over and why ("GMPI_BACKEND=auto; cuda not usable: no CUDA driver ..."). Valid with comm. */
GMPI_API gmpi_status_t gmpi_comm_backend_reason(gmpi_comm_t comm, const char **why);
/* "cpu", "cuda"; "invalid" for a value that is no backend. */
GMPI_API const char *gmpi_backend_name(gmpi_backend_t backend);
/* CUDA device ordinal of this rank; -1 on the cpu backend. */
GMPI_API gmpi_status_t gmpi_comm_device(gmpi_comm_t comm, int *device);
/* The raw handles, for interop. ncclComm_t and cudaStream_t (NULL stream on cpu is
 * GMPI_ERR_UNSUPPORTED). The MPI communicator gmpi uses internally (a duplicate). */
GMPI_API gmpi_status_t gmpi_comm_nccl(gmpi_comm_t comm, void **nccl_comm);
GMPI_API gmpi_status_t gmpi_comm_stream(gmpi_comm_t comm, void **stream);
GMPI_API gmpi_status_t gmpi_comm_mpi(gmpi_comm_t comm, MPI_Comm *mpi_comm);
/* cuda only: make the comm stream-ordered on a cudaStream_t (NULL returns to blocking mode).
 * Work gmpi queued before runs before work queued after, ordered on the device (no wait).
 * Outside stream mode a call reads and writes device buffers as CUDA-aware MPI does: what the
 * program's cudaMemcpy and cudaMemset put there is seen (gmpi makes them synchronous on the
 * buffers it is handed), but kernels and *Async work the program queued must be finished
 * before the call. GMPI_DEFAULT_STREAM_ORDER=1 orders every call after CUDA's default stream
 * too (docs/configuration.md). */
GMPI_API gmpi_status_t gmpi_comm_set_stream(gmpi_comm_t comm, void *stream);
/* Bytes of device memory the library itself holds on this rank (0 on cpu). */
GMPI_API gmpi_status_t gmpi_comm_mem_usage(gmpi_comm_t comm, size_t *library_bytes,
                                           size_t *user_bytes);

/* Which sends a receive can match. GMPI_MATCH_PER_KIND (the default): host and device messages
 * are matched by their own engines (a host receive matches host sends, a device receive device
 * sends), each with MPI's rules; host messages run at MPI's speed. GMPI_MATCH_ACROSS_KINDS: one
 * matching engine for every point-to-point message of the comm, whatever memory either end uses
 * (MPI's rule; what the drop-in layer needs); on cuda host messages then go through the device
 * engine's envelopes, staged where the two ends differ. Set it on every rank before the comm's
 * first point-to-point call (GMPI_ERR_STATE after); split and dup inherit it. Plans keep
 * per-kind matching. */
typedef enum { GMPI_MATCH_PER_KIND = 0, GMPI_MATCH_ACROSS_KINDS = 1 } gmpi_matching_t;
GMPI_API gmpi_status_t gmpi_comm_set_matching(gmpi_comm_t comm, gmpi_matching_t matching);
/* Which tags point to point may use, and what a receive's dtype means for matching.
 * GMPI_TAGS_TYPED (the default): a native host message carries its element size in three bits
 * of the MPI tag, so a receive matches sends whose dtype has its element size and gmpi_probe
 * counts in the sender's elements; tags go up to MPI_TAG_UB / 8. GMPI_TAGS_FULL: messages match
 * on source and tag alone, whatever the element sizes (GMPI_CHECK still reports another dtype),
 * every tag up to MPI_TAG_UB is valid, and a probe counts a native host message from another
 * rank in bytes (its element size is not carried; self messages and envelopes still count in
 * the sender's elements). Meant for comms that move bytes: the drop-in layer sends every
 * message as GMPI_BYTE. Set on every rank before the comm's first point-to-point call
 * (GMPI_ERR_STATE after); split and dup inherit it. */
typedef enum { GMPI_TAGS_TYPED = 0, GMPI_TAGS_FULL = 1 } gmpi_tags_t;
GMPI_API gmpi_status_t gmpi_comm_set_tags(gmpi_comm_t comm, gmpi_tags_t tags);
/* The largest tag point to point on comm accepts (it depends on gmpi_comm_set_tags). */
GMPI_API gmpi_status_t gmpi_comm_tag_ub(gmpi_comm_t comm, int *tag_ub);
/* How a standard send (gmpi_send, gmpi_isend) of host memory to another rank completes.
 * GMPI_SENDS_EAGER (the default): one of at most 16 KiB completes at once, with no receive
 * posted (gmpi sends a copy). GMPI_SENDS_AS_MPI: as MPI_Send and MPI_Isend do -- no copy; it
 * completes within MPI's own eager size, and above it once a receive matches it, so a program
 * must be correct under MPI's rules (the drop-in layer sets it: MPI programs are). Only the
 * sender's completion changes, so ranks may differ, and it may be set at any time (sends
 * posted after it); split and dup inherit it. Device messages, messages to one's own rank and
 * host messages carried by envelopes (GMPI_P2P=envelope; GMPI_MATCH_ACROSS_KINDS on cuda) keep
 * the eager promise. */
typedef enum { GMPI_SENDS_EAGER = 0, GMPI_SENDS_AS_MPI = 1 } gmpi_sends_t;
GMPI_API gmpi_status_t gmpi_comm_set_sends(gmpi_comm_t comm, gmpi_sends_t sends);
/* How the comm's standard sends of host memory complete (gmpi_comm_set_sends). */
GMPI_API gmpi_status_t gmpi_comm_sends(gmpi_comm_t comm, gmpi_sends_t *sends);
/* Where comm's host messages between two different ranks are MPI's own messages: *wire is the
 * MPI communicator that carries them, each posted to MPI when its call is made, its bytes as
 * they lie, its tag as given -- so that a program may send or receive such a message with MPI
 * itself on *wire and have it match gmpi's in MPI's order. That holds for the native host engine
 * on a comm set GMPI_TAGS_FULL and GMPI_SENDS_AS_MPI, without GMPI_CHECK, whose host messages
 * are not matched across kinds on a device; elsewhere *wire is MPI_COMM_NULL. Messages to or
 * from one's own rank never travel there (gmpi matches them itself), so a receive from this
 * rank or from GMPI_ANY_SOURCE must stay gmpi's. What MPI runs alone is MPI's: GMPI_TIMEOUT does
 * not bound its wait (gmpi_comm_watch_enter bounds a blocking call), and its errors are raised
 * on *wire (MPI_ERRORS_RETURN). */
GMPI_API gmpi_status_t gmpi_comm_host_wire(gmpi_comm_t comm, MPI_Comm *wire);
/* A blocking MPI call of the caller's own on comm's host wire, bounded as gmpi bounds its own
 * blocking host calls. gmpi_comm_watch_enter sets *watched 1 and marks comm as inside `what` (a
 * string that outlives the call) of count elements: a receive from source with recv_tag, a send
 * to dest with send_tag (-1 for a half the call does not have); the caller then makes its MPI call
 * and ends with gmpi_comm_watch_exit. Past GMPI_TIMEOUT gmpi's watchdog ends the job naming the
 * call, as it does for gmpi's own. *watched 0, nothing marked, where gmpi cannot bound such a call
 * so (GMPI_TIMEOUT_ACTION=status, no watchdog) or this rank must keep driving gmpi meanwhile (an
 * envelope or device engine in the process): the caller then goes through gmpi, or polls. */
GMPI_API gmpi_status_t gmpi_comm_watch_enter(gmpi_comm_t comm, const char *what, size_t count,
                                             int source, int recv_tag, int dest, int send_tag,
                                             int *watched);
GMPI_API gmpi_status_t gmpi_comm_watch_exit(gmpi_comm_t comm);
/* 1 when the comm's backend moves ptr as device memory (0 on cpu, for host memory and NULL). */
GMPI_API gmpi_status_t gmpi_mem_is_device(gmpi_comm_t comm, const void *ptr, int *is_device);
/* One line through gmpi's log at level info (GMPI_DEBUG=info or trace), prefixed by the rank
 * like gmpi's own lines: for layers built on gmpi (the drop-in layer, bindings). */
GMPI_API gmpi_status_t gmpi_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- memory ------------------------------------------------------------------------ */
/* Memory the comm's backend moves fastest: host on cpu, device on cuda. */
GMPI_API gmpi_status_t gmpi_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr);
GMPI_API gmpi_status_t gmpi_mem_free(gmpi_comm_t comm, void *ptr);
/* Copy bytes between any two buffers gmpi can move (host or this rank's device); complete on
 * return. Lets host code fill and check device buffers without CUDA headers. */
GMPI_API gmpi_status_t gmpi_mem_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes);

/* ---- collectives (in place when sendbuf == recvbuf; see docs/api.md for the layout) ----- */
GMPI_API gmpi_status_t gmpi_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                      gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_bcast(void *buf, size_t count, gmpi_dtype_t dtype, int root,
                                  gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                   gmpi_dtype_t dtype, gmpi_op_t op, int root, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                      gmpi_dtype_t dtype, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                           gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_alltoall(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                                     gmpi_dtype_t dtype, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_barrier(gmpi_comm_t comm);
/* Rooted data movement. gather: the root's recvbuf gets every rank's count elements, rank r's at
 * r*count (in place: the root's sendbuf == recvbuf, its block already there). scatter: rank r
 * gets the root's block r (in place: the root's recvbuf == sendbuf, its block left there).
 * Root-only arguments (gather's recvbuf, scatter's sendbuf) are ignored on the other ranks. */
GMPI_API gmpi_status_t gmpi_gather(const void *sendbuf, void *recvbuf, size_t count,
                                   gmpi_dtype_t dtype, int root, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                    gmpi_dtype_t dtype, int root, gmpi_comm_t comm);
/* Variable counts: counts and displacements are in elements, one per rank (root-only arrays
 * are read at the root only). In place (sendbuf == recvbuf): allgatherv and gatherv (at the
 * root) take this rank's block from recvbuf + displs[rank] (sendcount is then ignored);
 * scatterv's root keeps its block where it is; alltoallv exchanges recvbuf as laid out by
 * recvcounts/rdispls (sendcounts and sdispls are ignored). */
GMPI_API gmpi_status_t gmpi_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       gmpi_dtype_t dtype, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *recvcounts, const size_t *displs,
                                    gmpi_dtype_t dtype, int root, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_scatterv(const void *sendbuf, const size_t *sendcounts,
                                     const size_t *displs, void *recvbuf, size_t recvcount,
                                     gmpi_dtype_t dtype, int root, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *sdispls, void *recvbuf,
                                      const size_t *recvcounts, const size_t *rdispls,
                                      gmpi_dtype_t dtype, gmpi_comm_t comm);
/* sendbuf holds sum(recvcounts) elements; rank r gets the reduction of block r (recvcounts[r]
 * elements at the sum of the counts before it). In place: sendbuf == recvbuf, result at the
 * start. Every rank passes the same recvcounts. */
GMPI_API gmpi_status_t gmpi_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                            const size_t *recvcounts, gmpi_dtype_t dtype,
                                            gmpi_op_t op, gmpi_comm_t comm);

/* ---- nonblocking collectives: the blocking call's arguments, then the request ------------
 * They start in call order per comm (every rank must start a comm's collectives, blocking or
 * not, in the same order, as MPI requires), may overlap point to point and compute, and
 * complete through any wait or test call, in arrays mixed with point-to-point requests. The
 * buffers belong to gmpi until the request completes. */
GMPI_API gmpi_status_t gmpi_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                       gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm,
                                       gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ibcast(void *buf, size_t count, gmpi_dtype_t dtype, int root,
                                   gmpi_comm_t comm, gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                    gmpi_dtype_t dtype, gmpi_op_t op, int root, gmpi_comm_t comm,
                                    gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                       gmpi_dtype_t dtype, gmpi_comm_t comm,
                                       gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                            gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm,
                                            gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ialltoall(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                                      gmpi_dtype_t dtype, gmpi_comm_t comm,
                                      gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ibarrier(gmpi_comm_t comm, gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_igather(const void *sendbuf, void *recvbuf, size_t count,
                                    gmpi_dtype_t dtype, int root, gmpi_comm_t comm,
                                    gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                                     gmpi_dtype_t dtype, int root, gmpi_comm_t comm,
                                     gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        gmpi_dtype_t dtype, gmpi_comm_t comm,
                                        gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *recvcounts, const size_t *displs,
                                     gmpi_dtype_t dtype, int root, gmpi_comm_t comm,
                                     gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_iscatterv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *displs, void *recvbuf, size_t recvcount,
                                      gmpi_dtype_t dtype, int root, gmpi_comm_t comm,
                                      gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                       const size_t *sdispls, void *recvbuf,
                                       const size_t *recvcounts, const size_t *rdispls,
                                       gmpi_dtype_t dtype, gmpi_comm_t comm,
                                       gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                             const size_t *recvcounts, gmpi_dtype_t dtype,
                                             gmpi_op_t op, gmpi_comm_t comm,
                                             gmpi_request_t *request);

/* ---- point to point, with MPI matching ---------------------------------------------- */
GMPI_API gmpi_status_t gmpi_send(const void *buf, size_t count, gmpi_dtype_t dtype, int dest,
                                 int tag, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_recv(void *buf, size_t count, gmpi_dtype_t dtype, int source, int tag,
                                 gmpi_comm_t comm, gmpi_msg_status_t *status);
GMPI_API gmpi_status_t gmpi_isend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest,
                                  int tag, gmpi_comm_t comm, gmpi_request_t *request);
GMPI_API gmpi_status_t gmpi_irecv(void *buf, size_t count, gmpi_dtype_t dtype, int source, int tag,
                                  gmpi_comm_t comm, gmpi_request_t *request);
/* Synchronous sends (MPI_Ssend, MPI_Issend): complete only once a receive has matched the
 * message, whatever its size (no eager completion). In a plan they record as plain sends. */
GMPI_API gmpi_status_t gmpi_ssend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest,
                                  int tag, gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_issend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest,
                                   int tag, gmpi_comm_t comm, gmpi_request_t *request);
/* Completed requests are freed and set to NULL; a NULL request completes at once. Requests of
 * point to point and of nonblocking collectives mix freely (a collective's status is
 * {GMPI_ANY_SOURCE, GMPI_ANY_TAG, 0}). A copy of a completed request's handle is refused
 * (GMPI_ERR_INVALID_ARG, "not a live request") while fewer than 16 requests of the same thread
 * ended since; after that it is undefined, as in MPI (docs/reliability.md, "Stale handles"). */
GMPI_API gmpi_status_t gmpi_wait(gmpi_request_t *request, gmpi_msg_status_t *status);
GMPI_API gmpi_status_t gmpi_waitall(int count, gmpi_request_t *requests,
                                    gmpi_msg_status_t *statuses);
GMPI_API gmpi_status_t gmpi_test(gmpi_request_t *request, int *done, gmpi_msg_status_t *status);
/* Take back a receive that no message has matched yet: *cancelled 1, the request freed and set
 * to NULL, nothing written. Otherwise *cancelled 0 and the request is left to complete as it
 * would have (wait for it as before): a receive a message matched first, a send (gmpi does not
 * take sends back; MPI allows a cancel to fail), a collective, a request recorded in a plan. */
GMPI_API gmpi_status_t gmpi_cancel(gmpi_request_t *request, int *cancelled);
/* Give up a request's handle without waiting, as MPI_Request_free does: *request is set to NULL
 * and the operation goes on as it would have (a send is delivered when a receive matches it, a
 * receive fills its buffer); its status and result are dropped. gmpi frees the request once it
 * sees it complete (each later start of an operation on its comm looks) or, at the latest, when
 * its comm is freed or finalized: one still running then is let go unfinished (MPI calls
 * freeing a comm or finalizing with an operation pending erroneous), its buffers not touched
 * again. A NULL request is accepted; a request recorded in a plan is refused. */
GMPI_API gmpi_status_t gmpi_request_release(gmpi_request_t *request);
/* Wait until one non-NULL request completes: *index is its position (freed, set to NULL).
 * *index is GMPI_UNDEFINED when every request is NULL (or count is 0). */
GMPI_API gmpi_status_t gmpi_waitany(int count, gmpi_request_t *requests, int *index,
                                    gmpi_msg_status_t *status);
/* As waitany without waiting: *flag 0 and *index GMPI_UNDEFINED when none has completed;
 * *flag 1 and *index GMPI_UNDEFINED when every request is NULL. */
GMPI_API gmpi_status_t gmpi_testany(int count, gmpi_request_t *requests, int *index, int *flag,
                                    gmpi_msg_status_t *status);
/* *flag 1 when every request has completed (all are then freed and NULL, statuses filled);
 * else *flag 0 and no request is touched (MPI's rule). */
GMPI_API gmpi_status_t gmpi_testall(int count, gmpi_request_t *requests, int *flag,
                                    gmpi_msg_status_t *statuses);
/* Wait (bounded by GMPI_TIMEOUT) until a message from source with tag could be received, and
 * describe it without receiving it: status->count is in elements of the sender's dtype. The
 * next matching receive gets that message. Host and device messages are both probed. */
GMPI_API gmpi_status_t gmpi_probe(int source, int tag, gmpi_comm_t comm, gmpi_msg_status_t *status);
GMPI_API gmpi_status_t gmpi_iprobe(int source, int tag, gmpi_comm_t comm, int *flag,
                                   gmpi_msg_status_t *status);
GMPI_API gmpi_status_t gmpi_sendrecv(const void *sendbuf, size_t sendcount, gmpi_dtype_t sendtype,
                                     int dest, int sendtag, void *recvbuf, size_t recvcount,
                                     gmpi_dtype_t recvtype, int source, int recvtag,
                                     gmpi_comm_t comm, gmpi_msg_status_t *status);

/* ---- plans: record once, compile collectively, replay -------------------------------- */
/* A freed plan's handle (a copy of it) gets GMPI_ERR_INVALID_ARG from every plan call; a plan
 * whose comm was finalized gets GMPI_ERR_STATE, and gmpi_plan_free releases it. Requests
 * recorded but never waited when gmpi_plan_end fails stay the caller's: gmpi_wait releases
 * them with GMPI_ERR_STATE. */
GMPI_API gmpi_status_t gmpi_plan_begin(gmpi_comm_t comm);
GMPI_API gmpi_status_t gmpi_plan_end(gmpi_comm_t comm, gmpi_plan_t *plan);
GMPI_API gmpi_status_t gmpi_plan_run(gmpi_plan_t plan);
GMPI_API gmpi_status_t gmpi_plan_dump(gmpi_plan_t plan, FILE *out);
GMPI_API gmpi_status_t gmpi_plan_free(gmpi_plan_t *plan);

/* ---- versions -------------------------------------------------------------------------- */
/* "gmpi <version>", the MPI library's version string, and NCCL's ("none" when not built). */
GMPI_API gmpi_status_t gmpi_versions(const char **gmpi, const char **mpi, const char **nccl);

#ifdef __cplusplus
}
#endif
#endif /* GMPI_H */
