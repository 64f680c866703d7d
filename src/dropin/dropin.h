/* SPDX-License-Identifier: BSD-3-Clause */
/* libgmpi_mpi: the drop-in layer. It defines MPI's C functions, hands device buffers (and, under
 * GMPI_INTERPOSE=all, host buffers) to gmpi, and calls PMPI_* for everything else. It is a
 * client of gmpi's public API only (include/gmpi.h), like any program.
 *
 *   MPI_Allreduce(devbuf...)  dropin_coll_reduce.c, routed by dropin_coll_run (dropin_coll.h)
 *     -> gmpi_allreduce on the twin (predefined type and op; else staged through host memory
 *        to PMPI)
 *   MPI_Isend(devbuf...)      dropin_p2p.c    bytes of a contiguous type (else packed)
 *     -> gmpi_isend, its request wrapped in an MPI generalized request (dropin_req.c)
 *
 * libgmpi calls MPI only through PMPI_*, so gmpi's own MPI calls never come back into this
 * layer (docs/design.md, "Layers"): a gmpi call needs no guard around it. */
#ifndef GMPI_DROPIN_H
#define GMPI_DROPIN_H

#include <gmpi.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { INTERPOSE_OFF = 0, INTERPOSE_DEVICE, INTERPOSE_ALL } dropin_mode_t;

/* Set a status's count, in bytes, and its cancelled flag, as MPI_Status_set_elements_x(status,
 * MPI_BYTE, bytes) and MPI_Status_set_cancelled would. Open MPI 4 and 5 keep both in the status
 * itself (_ucount: bytes; _cancelled), and the layer is built against the mpi.h of the MPI it
 * runs on, so it stores them there: the two calls, with their argument checks, were about a
 * sixth of a small receive's cost in the layer. Any other MPI gets the calls. status is a
 * real one: callers handle MPI_STATUS_IGNORE, which Open MPI's calls would skip. */
static inline void dropin_status_set_count(MPI_Status *status, size_t bytes, int cancelled) {
#if defined(OPEN_MPI) && OPEN_MPI && defined(OMPI_MAJOR_VERSION) &&                                \
    (OMPI_MAJOR_VERSION == 4 || OMPI_MAJOR_VERSION == 5)
  status->_ucount = bytes;
  status->_cancelled = cancelled;
#else
  PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)bytes);
  PMPI_Status_set_cancelled(status, cancelled);
#endif
}

typedef struct {
  dropin_mode_t mode; /* GMPI_INTERPOSE */
  int active;         /* gmpi took MPI_COMM_WORLD: calls may be routed */
  int cpu;            /* the backend is cpu: in device mode nothing is routed */
  int keyval;         /* attribute holding each MPI comm's twin (its node, dropin.c) */
  gmpi_comm_t world;  /* the twin of MPI_COMM_WORLD (memory kinds are asked of it) */
  gmpi_comm_t self;   /* MPI_COMM_SELF's twin, made at first use (one rank: local) */
  double timeout_s;   /* GMPI_TIMEOUT: bounds waits on arrays that hold gmpi requests */
  int per_kind;       /* GMPI_INTERPOSE_MATCHING=per-kind: host messages stay on MPI */
  int kinds_mixed;    /* GMPI_INTERPOSE_KINDS=mixed: a collective's ranks agree on its route */
  int check;          /* GMPI_CHECK=1: ranks whose collective routes differ fail the call */
  int coll_fast;      /* active, GMPI_INTERPOSE=all, neither kinds_mixed nor check: every
                         blocking collective with a twin goes to gmpi (dropin_coll_fast) */
  MPI_Comm self_comm; /* the layer's own dup of MPI_COMM_SELF (unpacking partial elements) */
  /* The last comm whose twin was looked up, and that twin: most programs send on one comm call
   * after call, and MPI's attribute lookup is a sizable part of a small message's cost.
   * Forgotten (MPI_COMM_NULL) by dropin_forget_last_twin. */
  MPI_Comm last_comm;
  gmpi_comm_t last_twin;
  int last_rank, last_size; /* last_comm's, asked of MPI once: a collective's route needs them */
  MPI_Comm last_wire;       /* last_twin's gmpi_comm_host_wire (MPI_COMM_NULL: none) */
  int wire_posted; /* the program holds or held MPI's own request for a message through gmpi
                      (dropin_wire): waits on MPI's requests are polled within GMPI_TIMEOUT */
} dropin_t;

extern dropin_t dropin;

/* Host buffers go to gmpi only under GMPI_INTERPOSE=all; MPI_IN_PLACE and NULL are no buffer. */
typedef enum { VIA_MPI = 0, VIA_GMPI, VIA_STAGING } dropin_via_t;
/* Point to point: every message of a comm with a twin goes to gmpi (one matching engine per
 * comm, docs/design.md), device or host. NULL: MPI takes it. Inline for the comm asked last
 * (every message asks; a call across files costs more than the answer). */
gmpi_comm_t dropin_take_p2p_lookup(MPI_Comm comm, const void *buf);
/* Host messages stay on MPI (GMPI_INTERPOSE_MATCHING=per-kind, unless all go through gmpi). */
static inline int dropin_per_kind(void) { return dropin.per_kind && dropin.mode != INTERPOSE_ALL; }
static inline gmpi_comm_t dropin_take_p2p(MPI_Comm comm, const void *buf) {
  if (dropin.active && comm == dropin.last_comm && !dropin_per_kind()) return dropin.last_twin;
  return dropin_take_p2p_lookup(comm, buf);
}
/* A call MPI ran on a twin's wire, where errors return: its error goes to the program's comm's
 * error handler, as MPI's own would. */
int dropin_raised(MPI_Comm comm, int rc);
/* Before a blocking MPI call on the wire of the comm asked last: 1 when gmpi watches it
 * (gmpi_comm_watch_enter: its watchdog bounds the call as it bounds gmpi's own); the call ends
 * with dropin_wire_done, which leaves the watch and raises MPI's error on comm. 0: nothing was
 * marked, the call goes through gmpi. Inline: a small message's every instruction is latency. */
static inline int dropin_wire_watch(const char *what, int count, int source, int recv_tag, int dest,
                                    int send_tag) {
  int watched = 0;
  return gmpi_comm_watch_enter(dropin.last_twin, what, (size_t)count, source, recv_tag, dest,
                               send_tag, &watched) == GMPI_SUCCESS &&
         watched;
}
static inline int dropin_wire_done(MPI_Comm comm, int rc) {
  gmpi_comm_watch_exit(dropin.last_twin);
  return rc == MPI_SUCCESS ? rc : dropin_raised(comm, rc);
}
/* Forget the comm asked last and its twin's wire: whenever a twin is made, retired or freed,
 * before MPI frees any comm (whose handle MPI may then reuse), and after any gmpi call fails (a
 * failed twin refuses every call, and gmpi_comm_host_wire then gives no wire: its messages
 * must not go round the refusal, since what it gave up on may still be posted in MPI). */
void dropin_forget_last_twin(void);
/* The twin a probe on comm asks (NULL: MPI alone answers); *either when under per-kind
 * matching the message may wait in gmpi's engine or in MPI's, so both are asked. */
gmpi_comm_t dropin_take_probe(MPI_Comm comm, int *either);
/* The twin of comm (NULL when it has none). */
gmpi_comm_t dropin_twin(MPI_Comm comm);
/* Every rank of comm arrives in gmpi (gmpi_barrier on its twin, which drives gmpi's engines
 * while it waits, within GMPI_TIMEOUT); *arrived (may be NULL) says whether it did. Nothing is
 * done when the layer is inactive, comm has one rank or no twin. */
int dropin_arrive(MPI_Comm comm, const char *func, int *arrived);
/* Is ptr device memory? Asks gmpi (dropin_is_device_asked) only where there may be any: not on
 * the cpu backend, not for NULL or MPI_IN_PLACE. Inline: every buffer of every call asks. */
int dropin_is_device_asked(const void *ptr);
static inline int dropin_is_device(const void *ptr) {
  if (!ptr || ptr == MPI_IN_PLACE || !dropin.world || dropin.cpu) return 0;
  return dropin_is_device_asked(ptr);
}
/* dropin_twin, inline for the comm asked last. */
static inline gmpi_comm_t dropin_twin_inline(MPI_Comm comm) {
  if (comm != MPI_COMM_NULL && comm == dropin.last_comm) return dropin.last_twin;
  return dropin_twin(comm);
}
/* Where a nonblocking host message on comm to or from peer may be MPI's own request, posted on
 * the wire of comm's twin (gmpi_comm_host_wire) and handed to the program as it is: nothing of
 * the layer's or gmpi's is made, completed or freed per message, and the program's waits are
 * MPI's (a window of them: osu_bw). The comm must be the one asked last (its twin looked up
 * already), the twin's host messages MPI's own, the buffer host memory, and the peer another
 * rank (gmpi matches self messages itself, so a receive from this rank or MPI_ANY_SOURCE stays
 * gmpi's). MPI_COMM_NULL: through gmpi. */
static inline MPI_Comm dropin_wire(MPI_Comm comm, const void *buf, int peer) {
  if (comm != dropin.last_comm || dropin.last_wire == MPI_COMM_NULL || peer == dropin.last_rank ||
      peer == MPI_ANY_SOURCE || !dropin.active || dropin_per_kind() || dropin_is_device(buf))
    return MPI_COMM_NULL;
  return dropin.last_wire;
}
/* How a collective on comm with buffers a and b runs, from this rank's buffers alone: gmpi
 * (*twin set; native says gmpi can take the types and ops), MPI, or MPI on host copies of device
 * buffers. In device mode on the cpu backend nothing is classified: MPI at once. Under
 * GMPI_INTERPOSE_KINDS=mixed dropin_coll_run then makes the ranks agree (dropin_coll.c).
 * Inline: every collective asks, and its every instruction is latency. */
static inline dropin_via_t dropin_via(MPI_Comm comm, const void *a, const void *b, int native,
                                      gmpi_comm_t *twin) {
  if (!dropin.active) return VIA_MPI;
  int device = dropin_is_device(a) || dropin_is_device(b);
  if (!device && dropin.mode != INTERPOSE_ALL) return VIA_MPI;
  *twin = dropin_twin_inline(comm);
  if (*twin && native) return VIA_GMPI;
  return device ? VIA_STAGING : VIA_MPI;
}
/* The gmpi comm that copies and allocates for a call on comm: its own twin, so that a failed
 * MPI_COMM_WORLD leaves other comms' staging alone; MPI_COMM_WORLD's twin for a comm without
 * one (an intercommunicator). */
gmpi_comm_t dropin_copier(MPI_Comm comm);

/* A gmpi failure as MPI reports one: the detail on stderr, the comm's error handler called,
 * its MPI error code returned. */
int dropin_fail(MPI_Comm comm, const char *func, gmpi_status_t st);
int dropin_error_code(gmpi_status_t st);
/* GMPI_DEBUG=info: one line per call staged through host memory, naming why. */
void dropin_note_staged(const char *func, const char *why);

/* ---- types and ops (dropin_types.c) ---- */
/* gmpi's dtype for a predefined MPI type (0 when there is none). */
int dropin_dtype(MPI_Datatype type, gmpi_dtype_t *dtype);
/* gmpi's op for a predefined MPI op (0 when there is none): the op asked last inline (a
 * reduction's every call asks), else dropin_op_asked searches and remembers it. */
typedef struct {
  MPI_Op mpi;
  gmpi_op_t g;
} dropin_op_row_t;
extern _Atomic(const dropin_op_row_t *) dropin_last_op_row;
int dropin_op_asked(MPI_Op op, gmpi_op_t *gop);
static inline int dropin_op(MPI_Op op, gmpi_op_t *gop) {
  const dropin_op_row_t *row = atomic_load_explicit(&dropin_last_op_row, memory_order_relaxed);
  if (row->mpi != op) return dropin_op_asked(op, gop);
  *gop = row->g;
  return 1;
}
/* A type whose count elements are count*size contiguous bytes from buf (lb 0, no holes):
 * gmpi moves it as bytes. *size gets the type's size. */
int dropin_contiguous(MPI_Datatype type, size_t *size);
/* A predefined type's row of the layer's table. */
typedef struct {
  MPI_Datatype mpi;
  gmpi_dtype_t g;
  size_t size;  /* MPI's size of one element: the C type's */
  unsigned ops; /* bit op set: gmpi_op_valid(g, op), filled once gmpi runs (dropin_types_start) */
} dropin_type_row_t;
/* Fill each row's ops (gmpi asked once per pair, not per call). */
void dropin_types_start(void);
/* The rows found lately, one slot per hash of the type's handle: most programs move a few
 * types call after call -- a halo's bytes and its residual's double, one after the other --
 * and a message's sender waits on this lookup. (One slot, the row found last, missed both of
 * such a pair every time: about 100 instructions a call.) Each slot is an atomic pointer to a
 * row that never changes, so a call on another thread reads a whole row, old or new. */
enum { DROPIN_TYPE_MEMO = 8 };
extern _Atomic(const dropin_type_row_t *) dropin_type_memo[DROPIN_TYPE_MEMO];
static inline size_t dropin_type_slot(MPI_Datatype type) {
  return (size_t)(((uint64_t)(uintptr_t)type * 0x9E3779B97F4A7C15u) >> 61); /* top 3 bits */
}
/* type's row when it is a predefined type the memo holds (predefined: committed and
 * contiguous), else NULL (ask dropin_contiguous or dropin_dtype, which fill the memo). */
static inline const dropin_type_row_t *dropin_memo_type(MPI_Datatype type) {
  const dropin_type_row_t *row =
      atomic_load_explicit(&dropin_type_memo[dropin_type_slot(type)], memory_order_relaxed);
  return row->mpi == type ? row : NULL;
}
/* 0 for a type the program made and has not committed: MPI forbids moving one and Open MPI
 * refuses it (MPI_ERR_TYPE), so the layer does too wherever it lays out a type itself (it
 * would otherwise move it, or crash in MPI_Pack_size). */
int dropin_type_committed(MPI_Datatype type);

/* ---- staging through host memory (dropin_stage.c) ---- */
typedef struct {
  MPI_Comm comm; /* the call's: its twin copies, its error handler hears a failed copy */
  void *user;    /* the program's pointer (device memory) */
  char *host;    /* host copy of the span */
  ptrdiff_t lb;  /* span starts at user + lb */
  size_t bytes;  /* span length */
} dropin_stage_t;
/* Stage count elements of type at *buf when it is device memory: *buf then points into a host
 * copy (filled from the device). Nothing happens for host memory, NULL or MPI_IN_PLACE. Both
 * calls report a failure themselves (stderr, the comm's error handler) before returning it. */
int dropin_stage_in(dropin_stage_t *s, MPI_Comm comm, void **buf, MPI_Aint count,
                    MPI_Datatype type);
/* The same for a buffer known to be device memory (*buf may lie outside its allocation: a span
 * that starts at a negative displacement, where classifying *buf could answer host). */
int dropin_stage_device_in(dropin_stage_t *s, MPI_Comm comm, void **buf, MPI_Aint count,
                           MPI_Datatype type);
/* Copy a staged receive buffer back to the device (when copy_back), then free the copy. */
int dropin_stage_out(dropin_stage_t *s, int copy_back);

/* ---- collectives on any datatype (dropin_pack.c) ---- */
/* One side of a data-moving collective (what this rank sends, or receives) as gmpi's bytes: n
 * blocks of type at user, block i counts[i] elements at displs[i] extents. A contiguous type is
 * used where it lies (base == user); any other is packed in host memory, and moved from there
 * (base == packed) or, when user is device memory, from a device copy of the packed bytes
 * (base == dev): gmpi picks its engine by memory kind, so a side is the kind its rank passed. */
typedef struct {
  void *user;                 /* the program's buffer */
  MPI_Comm comm;              /* the call's (the request's, when one unpacks): hears failures */
  MPI_Datatype type;          /* a dup of the program's type when packed, else MPI_DATATYPE_NULL */
  MPI_Aint extent;            /* of the program's type */
  int n;                      /* blocks */
  int *counts, *displs;       /* per block: elements, and offset in extents */
  size_t *bcounts;            /* per block: bytes (gmpi's counts) */
  size_t *bdispls;            /* per block: byte offset from base (gmpi's displacements) */
  char *packed;               /* packed bytes of every block; NULL for a contiguous type */
  size_t total;               /* bytes of packed */
  void *dev;                  /* device memory for the packed bytes, when user is device memory */
  gmpi_comm_t g;              /* the twin that allocated dev and copies its bytes */
  int reported;               /* a failure was reported already (the comm's error handler) */
  void *base;                 /* what gmpi reads or writes */
  size_t *alloc;              /* the one allocation holding the four arrays, when not inline */
  size_t inline_bytes[2 * 8]; /* the arrays of up to 8 blocks: no allocation per call */
  int inline_ints[2 * 8];
} dropin_side_t;
void dropin_side_clear(dropin_side_t *s);
/* counts NULL: every block has count elements at displs i*count. Negative counts: MPI_ERR_COUNT.
 * comm: the call's (its twin allocates and copies device memory). */
int dropin_side_init(dropin_side_t *s, MPI_Comm comm, void *buf, MPI_Datatype type, int n,
                     const int *counts, const int *displs, int count);
void dropin_side_free(dropin_side_t *s);
/* A fixed-block side that needs no packing: count elements of a committed contiguous type per
 * block, read or written where the program's buffer lies. Sets base and bcounts[0] (one block's
 * bytes) and nothing else: a view owns nothing, is never packed, unpacked or freed, and is read
 * only by the fixed-block calls' starts. 0 when the side needs dropin_side_init (a derived or
 * uncommitted type, a negative count: it packs, or reports the error). */
int dropin_side_view_asked(dropin_side_t *s, void *buf, MPI_Datatype type, int count);
/* The view itself: buf, blocks of bytes each; returns 1. */
static inline int dropin_side_view_at(dropin_side_t *s, void *buf, size_t bytes) {
  s->base = buf;
  s->bcounts = s->inline_bytes;
  s->inline_bytes[0] = bytes;
  return 1;
}
static inline int dropin_side_view(dropin_side_t *s, void *buf, MPI_Datatype type, int count) {
  const dropin_type_row_t *row = dropin_memo_type(type); /* the common case: inline, no call */
  if (!row || count < 0) return dropin_side_view_asked(s, buf, type, count);
  return dropin_side_view_at(s, buf, (size_t)count * row->size);
}
/* Pack block i (or all): nothing for a contiguous type. A device side's blocks are read from a
 * host copy of the program's buffer and their packed bytes copied to dev. */
int dropin_side_pack(dropin_side_t *s, int i);
int dropin_side_pack_all(dropin_side_t *s);
/* Unpack every block into the program's buffer: nothing for a contiguous type. A device side's
 * packed bytes come from dev, and the program's buffer is staged around the unpacking (the holes
 * keep what the device held). */
int dropin_side_unpack_all(dropin_side_t *s);

/* ---- point to point (dropin_p2p.c) and persistent requests (dropin_persist.c) ---- */
typedef enum { DROPIN_SEND_STANDARD, DROPIN_SEND_SYNC, DROPIN_SEND_BUFFERED } dropin_send_kind_t;
/* The layer never calls its own exported MPI functions: a tool preloaded before it would see
 * those calls as the program's, and a library never interposes on itself. What its functions
 * need of one another is here, under the layer's own names. */
/* A nonblocking send of kind through comm's twin (as MPI_Isend / MPI_Issend). */
int dropin_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 int kind, MPI_Request *request);
/* MPI_Irecv's work; func names the call in errors. */
int dropin_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Request *request, const char *func);
/* Persistent handles live (0: the wait and test calls need no swap). */
extern int dropin_persist_live;
/* The array MPI should see: each persistent handle replaced by its started operation's request
 * (MPI_REQUEST_NULL when inactive). reqs itself when it holds no persistent handle. */
MPI_Request *dropin_persist_swap(int n, MPI_Request reqs[]);
/* After MPI's call: handles back in place (inactive when their operation completed). */
void dropin_persist_unswap(int n, MPI_Request reqs[], MPI_Request *tmp);
/* MPI_Request_free of a persistent handle: 1 when it was one (freed). */
int dropin_persist_free(MPI_Request *request);

/* ---- requests (dropin_req.c) ---- */
typedef struct dropin_req dropin_req_t;
/* Work run when the gmpi request completes, before MPI sees the request complete (unpacking a
 * received message); returns an MPI error code. */
typedef int (*dropin_after_fn)(dropin_req_t *r);
struct dropin_req {
  MPI_Request mpi;         /* the generalized request the program holds */
  gmpi_request_t g;        /* gmpi's request; NULL once complete */
  MPI_Comm comm;           /* for the error handler */
  int complete;            /* gmpi finished it and MPI was told */
  int driving;             /* being driven: a polled wait inside drives every other one */
  int detached;            /* MPI_Request_free'd before completion: freed when done */
  int is_recv;             /* a point-to-point receive: MPI_Cancel may take it back */
  int cancelled;           /* taken back by MPI_Cancel (MPI_Test_cancelled says so) */
  int given_up;            /* MPI_Cancel asked for and could not be done (a send) */
  int error;               /* MPI error code of the outcome */
  int source, tag;         /* status of a receive */
  size_t bytes;            /* bytes received */
  dropin_after_fn after;   /* NULL or completion work */
  void *owned;             /* freed with the request (packed or staged data) */
  void (*release)(void *); /* frees owned when set (else free) */
  void *user;              /* the after step's destination */
  MPI_Aint user_count;     /* its count ... */
  MPI_Datatype user_type;  /* ... and type */
  int type_owned;          /* user_type is the layer's dup, freed with the request */
  MPI_Request inner;       /* a staged nonblocking call: MPI's request on the host copies */
  dropin_stage_t stage[2]; /* staged device buffers: [1] is copied back at completion */
  struct dropin_req *next; /* in the table's bucket */
};
/* Wrap gmpi request g in an MPI request the program can wait on; r may carry after-work. */
int dropin_req_wrap(MPI_Comm comm, gmpi_request_t g, dropin_req_t **out, MPI_Request *request);
/* A request that is complete already (a buffered send: its data was copied). */
int dropin_req_done(MPI_Comm comm, MPI_Request *request);
/* The same for a receive that ended already: its status (source, tag, bytes) and error. */
int dropin_req_done_status(MPI_Comm comm, int source, int tag, size_t bytes, int error,
                           MPI_Request *request);
/* Wrap MPI's request on staged host copies: the stages are freed (stage[1] copied back to the
 * device) when it completes. */
int dropin_req_staged(MPI_Comm comm, MPI_Request inner, const dropin_stage_t stage[2],
                      MPI_Request *request);
/* Number of live wrapped requests: 0 means every wait/test is MPI's own. */
extern int dropin_live_requests;
void dropin_req_finalize(void);
/* Complete an MPI request that MPI alone will finish (rc: the call that started it), driving
 * gmpi's live requests meanwhile: a rank inside MPI must still progress gmpi, whose messages
 * its peers may be waiting for (MPI's progress rule). */
int dropin_polled(int rc, MPI_Request *request);
/* The same with the request's status (a host receive or send that replaces a blocking call). */
int dropin_polled_status(int rc, MPI_Request *request, MPI_Status *status);
/* MPI_Request_free's, MPI_Cancel's, MPI_Wait's and MPI_Waitall's work (persistent handles
 * included). */
int dropin_request_free(MPI_Request *request);
int dropin_cancel(MPI_Request *request);
int dropin_wait(MPI_Request *request, MPI_Status *status);
int dropin_waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
/* 1 when no gmpi request of this process is live: a blocking MPI call cannot starve gmpi. */
int dropin_quiet(void);
/* Monotonic seconds, for the layer's own GMPI_TIMEOUT bounds. */
double dropin_now(void);
/* 1 once GMPI_TIMEOUT (0: never) has passed since start, a dropin_now() reading. */
int dropin_timed_out(double start);
/* Drive comm's gmpi requests once (never waiting) and count those still live. */
int dropin_req_live_on(MPI_Comm comm);
/* comm is being freed with requests still live: they report errors to MPI_COMM_WORLD now. */
void dropin_req_rehome(MPI_Comm comm);

#endif
