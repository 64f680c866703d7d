/* SPDX-License-Identifier: BSD-3-Clause */
/* The drop-in's collectives, routed in one place. Each MPI collective fills one coll_call_t
 * with the program's arguments and hands it to dropin_coll_run with its entry (coll_kind_t):
 *
 *   describe  which buffers this rank uses, the spans to stage, whether gmpi takes the types
 *   prepare   data-moving collectives: this rank's sides as gmpi's bytes (dropin_pack.c)
 *   start     gmpi's call, blocking or nonblocking
 *   mpi       MPI's own call, on the program's buffers or on host copies of device ones
 *   view      fixed-block data-moving collectives on contiguous types: the program's buffers
 *             as gmpi's bytes, with nothing to prepare
 *
 * dropin_coll_run (below) asks dropin_via for this rank's route (gmpi, MPI on host copies,
 * MPI) and takes gmpi at once where nothing could change that; dropin_coll_run_routed
 * (dropin_coll.c) makes the ranks agree on it under GMPI_INTERPOSE_KINDS=mixed or GMPI_CHECK,
 * and takes it. Nothing else chooses. Reductions are in dropin_coll_reduce.c, data movement in
 * dropin_coll_move.c. */
#ifndef GMPI_DROPIN_COLL_H
#define GMPI_DROPIN_COLL_H

#include "dropin.h"

/* One side of the program's arguments: a buffer, its count (or counts and displacements in the
 * v-forms; NULL otherwise) and type. MPI_Bcast's buffer is the recv side; a reduction's one
 * type is both sides'. */
typedef struct {
  void *buf;
  int count;
  const int *counts, *displs;
  MPI_Datatype type;
} coll_side_t;

typedef struct {
  const char *func;     /* the MPI function, for errors and notes */
  MPI_Comm comm;        /* the program's comm */
  MPI_Request *request; /* NULL: the blocking call */
  coll_side_t send, recv;
  MPI_Op op; /* reductions; MPI_OP_NULL otherwise */
  int root;  /* rooted collectives */
  /* ---- set by the kind's describe ---- */
  int n, me;               /* comm's size and this rank, where the kind asks for them */
  int is_root;             /* this rank is the root (every rank, without one) */
  int inplace;             /* MPI_IN_PLACE where it applies at this rank */
  const void *send_used;   /* the send buffer this rank uses (NULL: none) */
  void *recv_used;         /* the receive buffer this rank uses (NULL: none) */
  MPI_Aint send_span;      /* elements of send.type a staged send buffer spans */
  MPI_Aint recv_span;      /* elements of recv.type a staged receive buffer spans */
  int native;              /* gmpi can take the call's types (and op) */
  int args_missing;        /* a count or displacement array gmpi needs is NULL */
  MPI_Datatype named_type; /* the type a staged call's note names */
  const char *no_gmpi;     /* why gmpi does not take this call (it has none; kinds), or NULL */
  int bufferless;          /* no buffers (MPI_Ibarrier): every rank routes it alike */
  gmpi_dtype_t dtype;      /* reductions: gmpi's type and op, when native */
  gmpi_op_t gop;
} coll_call_t;

/* Both sides of a data-moving collective as gmpi's bytes; a nonblocking call's request owns
 * them until it completes. */
typedef struct {
  dropin_side_t send, recv;
} coll_sides_t;

/* One collective, blocking and nonblocking alike (the call's request says which). */
typedef struct {
  /* Fill the describe part of c. Never fails: a bad argument is left for gmpi or MPI. */
  void (*describe)(coll_call_t *c);
  /* Data-moving collectives: this rank's sides as gmpi's bytes, packed; an MPI code. NULL for
   * the calls gmpi takes on the program's own buffers (reductions, barrier). */
  int (*prepare)(coll_call_t *c, coll_sides_t *s);
  /* gmpi's call on twin: started when request is non-NULL, else run. s: prepare's sides or
   * view's views (read here only: gmpi keeps pointers and counts, not s); NULL without prepare.
   * NULL for a collective gmpi has no form of (describe never makes it native). */
  gmpi_status_t (*start)(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
                         gmpi_request_t *request);
  /* MPI's own call, blocking or nonblocking as c says, on sb and rb. */
  int (*mpi)(const coll_call_t *c, const void *sb, void *rb);
  /* Fixed-block data-moving collectives: this rank's sides as views of the program's own
   * buffers (dropin_side_view) when every type it uses is contiguous, returning 1; 0 leaves the
   * call to prepare. A view costs a few stores where prepare's sides are made, packed, unpacked
   * and freed: a small collective's latency. NULL: the v-forms, and the calls without prepare. */
  int (*view)(coll_call_t *c, coll_sides_t *s);
} coll_kind_t;

/* A fixed-block kind's describe, view and start: inlined into each MPI function, whatever the
 * compiler's size heuristics say. dropin_coll_run calls them through a constant kind, and out
 * of line each cost a frame and the coll_call_t's fields read back from memory: 20-40
 * instructions of a small collective's few hundred. */
#define DROPIN_COLL_INLINE static inline __attribute__((always_inline))

/* c, described and routed on this rank (via, twin), made one route on every rank where the
 * settings ask for that (GMPI_INTERPOSE_KINDS, GMPI_CHECK), then run that way; an MPI code. */
int dropin_coll_run_routed(const coll_kind_t *kind, coll_call_t *c, dropin_via_t via,
                           gmpi_comm_t twin);

/* gmpi on the program's own buffers (reductions, barrier; views: s, else NULL); a nonblocking
 * call's gmpi request is wrapped as the program's MPI request, owning nothing. */
static inline int dropin_coll_run_direct(const coll_kind_t *kind, const coll_call_t *c,
                                         gmpi_comm_t twin, const coll_sides_t *s) {
  gmpi_request_t g = NULL;
  gmpi_status_t st = kind->start(c, twin, s, c->request ? &g : NULL);
  if (st != GMPI_SUCCESS) return dropin_fail(c->comm, c->func, st);
  return c->request ? dropin_req_wrap(c->comm, g, NULL, c->request) : MPI_SUCCESS;
}

/* gmpi moving sides made for it (dropin_coll.c: derived types packed, the v-forms). */
int dropin_coll_run_sides(const coll_kind_t *kind, coll_call_t *c, gmpi_comm_t twin);

/* gmpi: on the program's buffers, on views of them, or on sides made for gmpi. */
static inline int dropin_coll_run_gmpi(const coll_kind_t *kind, coll_call_t *c, gmpi_comm_t twin) {
  coll_sides_t views;
  if (!kind->prepare) return dropin_coll_run_direct(kind, c, twin, NULL);
  if (kind->view && kind->view(c, &views)) return dropin_coll_run_direct(kind, c, twin, &views);
  return dropin_coll_run_sides(kind, c, twin);
}

/* Route c (dropin_via) and run it the way kind says; an MPI code. c is the caller's, built in
 * place: its builders (reduction, moving) return one compound literal (a struct filled field by
 * field and returned, or passed by value, was copied: ~35 instructions a call). Inline, so that
 * kind's describe, view and start, constants in each MPI function, are called directly: a
 * blocking call gmpi takes on the program's own buffers (or views of them), where no agreement
 * of the ranks is asked for, goes from the MPI function to gmpi's in one frame (a small
 * collective's every instruction is latency on every rank). */
static inline int dropin_coll_run(const coll_kind_t *kind, coll_call_t *c) {
  kind->describe(c);
  gmpi_comm_t twin = NULL;
  dropin_via_t via = dropin_via(c->comm, c->send_used, c->recv_used, c->native, &twin);
  if (via == VIA_GMPI && !c->request && !dropin.kinds_mixed && !dropin.check)
    return dropin_coll_run_gmpi(kind, c, twin);
  return dropin_coll_run_routed(kind, c, via, twin);
}

/* The blocking collectives' first test, before any call is built: can gmpi take this call on
 * the program's own buffers with nothing left to decide? Yes when every buffer goes to gmpi
 * (GMPI_INTERPOSE=all: dropin_via answers VIA_GMPI for any native call with a twin), the ranks
 * need not agree on the route (no GMPI_INTERPOSE_KINDS=mixed, no GMPI_CHECK), comm is the one
 * asked last and has a twin, and type is a predefined type the memo holds; the call's own
 * checks (a reduction's op) are the caller's. Returns type's row with *twin set, or NULL: the
 * generic path (dropin_coll_run), which decides the same for these calls. It skips building
 * the call (a coll_call_t of twenty fields), its describe, route and view: about a third of
 * what the layer spent on a small bcast (docs/performance.md, "a tenth pass"). */
static inline const dropin_type_row_t *dropin_coll_fast(MPI_Comm comm, MPI_Datatype type, int count,
                                                        gmpi_comm_t *twin) {
  if (!dropin.coll_fast || comm != dropin.last_comm || !dropin.last_twin || count < 0) return NULL;
  *twin = dropin.last_twin;
  return dropin_memo_type(type);
}

/* A fast blocking collective (dropin_coll_fast's comm, the one asked last) on host buffers a
 * and b as MPI's own call on its twin's wire (dropin_wire), inside gmpi's watch: the MPI call
 * gmpi's host engine would make for it, on the same communicator, minus gmpi's checks, flight
 * record and route. Every rank decides alike: the wire and the watch follow the comm's and the
 * process's settings (no GMPI_CHECK, no engine needing this rank's progress, not
 * GMPI_TIMEOUT_ACTION=status -- where gmpi's own call would be gated or polled), and
 * GMPI_INTERPOSE_KINDS=uniform promises one memory kind on every rank. The call ends with
 * dropin_wire_done. MPI_COMM_NULL: through gmpi. */
static inline MPI_Comm dropin_coll_wire(const void *a, const void *b, const char *what, int count) {
  if (dropin.last_wire == MPI_COMM_NULL || dropin_is_device(a) || dropin_is_device(b) ||
      !dropin_wire_watch(what, count, -1, -1, -1, -1))
    return MPI_COMM_NULL;
  return dropin.last_wire;
}

/* A reduction's fast test after dropin_coll_fast: op is the predefined op asked last and gmpi
 * applies it to the row's type (*gop set). An op not asked last takes the generic path, which
 * asks for it (dropin_op) and so makes it the one asked last: asking here, a call out of line,
 * made every fast call keep its arguments across it (about 15 instructions a call). */
static inline int dropin_coll_fast_op(const dropin_type_row_t *row, MPI_Op op, gmpi_op_t *gop) {
  const dropin_op_row_t *o = atomic_load_explicit(&dropin_last_op_row, memory_order_relaxed);
  if (!row || o->mpi != op || !(row->ops >> o->g & 1)) return 0;
  *gop = o->g;
  return 1;
}

/* The generic path of an MPI function that has a fast one: out of line, and with the MPI
 * function's own parameters, so that the MPI function ends in a jump to it and its fast path's
 * frame holds only what that path needs (sharing the function, it saved every register the
 * generic path uses; calling it with other parameters, the six the argument shuffle needs:
 * about 15 instructions a call). */
#define DROPIN_COLL_GENERIC static __attribute__((noinline))

/* A fast call's result, as dropin_coll_run_direct reports one. */
static inline int dropin_coll_fast_done(MPI_Comm comm, const char *func, gmpi_status_t st) {
  return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, func, st);
}

/* comm's rank and size: the twin memo's (dropin_t) for the comm asked last, else MPI's. */
static inline int dropin_rank_of(MPI_Comm comm) {
  int r = 0;
  if (comm != MPI_COMM_NULL && comm == dropin.last_comm) return dropin.last_rank;
  PMPI_Comm_rank(comm, &r);
  return r;
}

static inline int dropin_size_of(MPI_Comm comm) {
  int n = 0;
  if (comm != MPI_COMM_NULL && comm == dropin.last_comm) return dropin.last_size;
  PMPI_Comm_size(comm, &n);
  return n;
}

#endif
