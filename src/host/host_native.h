/* SPDX-License-Identifier: BSD-3-Clause */
/* Native point to point on host buffers (not GMPI_P2P=envelope): MPI matches, and gmpi adds
 * the two promises MPI libraries do not keep for it, and GMPI_CHECK's dtype check.
 *  - Eager: gmpi documents that a send of at most GMPI_ENV_EAGER_BYTES completes with no
 *    receive posted; Open MPI's own limits are 4 KiB (vader) and ~1 KiB (self). Such a send is
 *    copied and the copy is sent "detached" (host_detached.c); its request completes at once.
 *    A comm set to GMPI_SENDS_AS_MPI (gmpi_comm_set_sends) sends to other ranks without it.
 *  - Self messages: Open MPI 4.1's self transport gets truncation wrong (reports success, or
 *    writes past the receive buffer), so messages to one's own rank never reach MPI; gmpi
 *    matches them itself (host_self.c).
 * Private to src/host. */
#ifndef GMPI_HOST_NATIVE_H
#define GMPI_HOST_NATIVE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/comm.h"
#include "../core/envelope.h"
#include "../core/reuse.h"
#include "host.h"

/* Native messages carry the sender's element size in the low bits of their MPI tag (user tag
 * * 8 + size class), so that gmpi_probe can count a message in the sender's elements, which
 * MPI alone cannot tell. A receive with a tag posts its own element size's class: in native
 * mode a message matches receives whose dtype has its element size (MPI's type-matching rule,
 * on sizes); an ANY_TAG receive takes any. gmpi_mpi_tag_ub leaves room for the bits. On a
 * GMPI_TAGS_FULL comm (full: comm->tags_full) the MPI tag is the user's tag, sizes are not
 * matched, and a message's element size counts as 1 (bytes). */
int gmpi_host_mpi_tag(int full, int tag, gmpi_dtype_t dtype); /* GMPI_ANY_TAG: MPI_ANY_TAG */
int gmpi_host_user_tag(int full, int mpi_tag);
size_t gmpi_host_tag_elem_size(int full, int mpi_tag);

/* How a receive ended, kept until its test reports it: a failure is described (gmpi_error)
 * in the call that waits for the receive, not in the send that happened to deliver it. */
typedef struct {
  int source, tag;
  size_t bytes;           /* the message's length; 0 when MPI truncated it (MPI does not say) */
  int truncated;          /* longer than the receive buffer */
  int mpi_rc;             /* the MPI error that ended it, other than truncation; else MPI_SUCCESS */
  int checked;            /* GMPI_CHECK: sender_dtype is what the sender said it sent */
  int sender_dtype;       /* a gmpi_dtype_t; -1: the message had no check header */
  size_t other_elem_size; /* GMPI_CHECK: ended by a message of this element size (no data) */
} host_recv_end_t;

/* ---- GMPI_CHECK=1 on native messages (host_frame.c) ----
 * MPI matches on sizes only (the size class in the tag), so an int32 send is received by a
 * float32 receive. On a checked comm every message therefore travels as one MPI message
 * [header][payload], the header holding the sender's dtype and count, and the receive compares
 * it with its own (GMPI_ERR_MISMATCH). Matching stays MPI's. A small message is copied into one
 * buffer behind its header (a receive, into one buffer and out); a larger one goes as one MPI
 * struct type over the header and the caller's buffer, no copy. Self messages carry the dtype
 * in their queue entry instead (host_self.c). */
typedef struct {
  uint32_t magic; /* HOST_FRAME_MAGIC: a message from an unchecked rank has none */
  int32_t dtype;  /* the sender's gmpi_dtype_t */
  uint64_t count; /* the sender's count */
} host_frame_hdr_t;

/* Native matching keeps a receive away from messages of another element size, which MPI would
 * match to it (a type mismatch). Under GMPI_CHECK a receive with a source and a tag that is
 * still waiting after this many tests looks for one (gmpi_host_other_size). */
#define HOST_OTHER_SIZE_POLLS 1024

/* Payloads up to this many bytes are copied behind their header; larger ones use a struct
 * type (~0.1 us to build, and Open MPI's slower path for non-contiguous data). Measured with
 * single-copy transfers off (so that both ways move the same): checked over default sendrecv
 * 1.05-1.08 copied from 4 to 16 KiB, 1.17-1.19 with the struct type; equal at 32 KiB. */
#define HOST_FRAME_COPY_BYTES 16384

/* One framed MPI message's gmpi side; it must outlive the MPI request (MPI reads or writes the
 * header and the staging buffer until then). Zeroed: nothing held. */
typedef struct {
  host_frame_hdr_t hdr; /* a send's header; a receive's once unframed */
  void *staging;        /* [header][payload] of a copied message, kept for reuse; else NULL */
  size_t staging_cap;
  int copied; /* the message is in staging (else a struct type covers both parts) */
} host_frame_t;

/* The MPI buffer, count and type that carry a's message framed (a send: the header is written
 * and a small payload copied; a receive: room for a header and a->count elements). Payloads up
 * to copy_max bytes are copied. *type goes to gmpi_mpi_type_release after the MPI call. */
gmpi_status_t gmpi_host_frame(host_frame_t *f, const gmpi_p2p_args_t *a, size_t limit,
                              size_t copy_max, void **buf, int *n, MPI_Datatype *type);
/* A framed receive ended: the header read, a copied payload moved to a->buf, end->bytes the
 * payload's length, end->sender_dtype set. */
void gmpi_host_unframe(host_frame_t *f, const gmpi_p2p_args_t *a, host_recv_end_t *end);
/* The frame's staging buffer freed (MPI is done with it), or parked (MPI may still use it). */
void gmpi_host_frame_free(host_frame_t *f);
void gmpi_host_frame_park(host_frame_t *f);

struct host_self_msg;

/* A native request's part (req->be). */
typedef struct {
  MPI_Request mpi;   /* MPI_REQUEST_NULL while (or once) MPI has no part in it */
  MPI_Datatype type; /* of the MPI request; released when the request ends */
  int complete;      /* ended without MPI_Test: an eager or matched send, or a receive in end */
  host_recv_end_t end;
  struct host_self_msg *queued; /* a large self send: its message, until a receive takes it */
  int pending;                  /* a receive in the self-pending list */
  int framed;                   /* its MPI message is framed (GMPI_CHECK): frame in use */
  unsigned polls;               /* tests of a framed receive, for gmpi_host_other_size */
  host_frame_t frame;
  gmpi_request_t next_pending;
} host_req_t;

/* An unmatched message to one's own rank. */
typedef struct host_self_msg {
  int tag;
  size_t bytes;
  size_t elem_size;    /* the sender's dtype's, for gmpi_probe */
  int dtype;           /* the sender's, for GMPI_CHECK */
  void *copy;          /* eager: gmpi's copy of the data (NULL when bytes == 0) */
  gmpi_request_t send; /* large: the send, whose buffer holds the data; NULL when eager */
  struct host_self_msg *next;
} host_self_msg_t;

/* Per host engine (gmpi_host_t.native), made by the first native post. */
struct gmpi_host_native {
  int checked; /* GMPI_CHECK=1: messages are framed, receives compare dtypes */
  /* Detached eager sends: MPI's request and gmpi's copy, freed once MPI is done with it. */
  MPI_Request *detached;
  void **detached_copy;
  int *reaped_index; /* scratch for MPI_Testsome */
  size_t n_detached, cap_detached;
  /* A copy buffer of HOST_SPARE_COPY_BYTES that MPI finished with inside its send (the common
   * case for small messages), kept for the next small send: no malloc and free per message. */
  void *spare_copy;
  /* Unmatched self messages in send order, and receives that a self message could match
   * (source own rank or ANY_SOURCE) in post order. */
  host_self_msg_t *self_head, **self_tail;
  gmpi_request_t pending_head, *pending_tail;
  /* The exchange's two frames (checked only), reused call after call; parked and replaced
   * when a timed-out exchange leaves MPI requests on them. */
  host_frame_t *exchange_frames;
  gmpi_spares_t spare_parts; /* released request parts kept for the next post (host_p2p.c) */
};
typedef struct gmpi_host_native host_native_t;

/* host_detached.c */
#define HOST_SPARE_COPY_BYTES 4096 /* detached copies up to this size reuse one buffer */
/* Whether a send to another rank goes detached: a standard send of at most
 * GMPI_ENV_EAGER_BYTES, unless the comm's sends complete as MPI's (gmpi_comm_set_sends). */
static inline int gmpi_host_sends_detached(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  return !a->sync && !comm->sends_as_mpi && gmpi_p2p_bytes(a) <= GMPI_ENV_EAGER_BYTES;
}
/* Copy a send of at most GMPI_ENV_EAGER_BYTES and MPI_Isend the copy; req is complete. */
gmpi_status_t gmpi_host_detached_send(gmpi_host_t *host, gmpi_request_t req);
/* The same for a blocking send with no request (host_exchange.c): done once this returns. */
gmpi_status_t gmpi_host_detached_post(gmpi_host_t *host, gmpi_comm_t comm,
                                      const gmpi_p2p_args_t *a);
/* Free the copies of detached sends that MPI has finished. Never blocks. Inline: every native
 * post asks, and most find none (a sender waits on this). */
void gmpi_host_detached_test(host_native_t *nat);
static inline void gmpi_host_detached_reap(host_native_t *nat) {
  if (nat && nat->n_detached) gmpi_host_detached_test(nat);
}
/* At close: let detached sends finish within GMPI_TIMEOUT, then give up on the rest. */
void gmpi_host_detached_drain(gmpi_comm_t comm, host_native_t *nat);

/* host_self.c */
/* Post a send to one's own rank: to the first pending receive it matches, else queued. */
gmpi_status_t gmpi_host_self_send(host_native_t *nat, gmpi_request_t req);
/* A receive from own rank or ANY_SOURCE takes the first queued self message it matches. */
void gmpi_host_self_take(host_native_t *nat, gmpi_request_t req, int *matched);
/* Receives waiting for a self message (ANY_SOURCE ones also wait in MPI). */
void gmpi_host_self_pending_add(host_native_t *nat, gmpi_request_t req);
void gmpi_host_self_pending_remove(host_native_t *nat, gmpi_request_t req);
/* A large self send given up before a receive took its message: the message goes too. */
void gmpi_host_self_forget_send(host_native_t *nat, gmpi_request_t req);
/* The first queued self message a probe for tag sees (the one a receive would take). */
void gmpi_host_self_probe(host_native_t *nat, int me, int tag, int *flag,
                          gmpi_msg_status_t *status);
/* At close: free every queued message. */
void gmpi_host_self_free_all(host_native_t *nat);

/* host_p2p.c */
/* The engine's native state, made at its first use. */
gmpi_status_t gmpi_host_native(gmpi_host_t *host, host_native_t **out);
/* How a receive ended in MPI (MPI_Test or MPI_Wait's status and return code; type: the
 * receive's, made of bytes; MPI_DATATYPE_NULL when its length is not asked: bytes 0). */
void gmpi_host_recv_end(int full, const MPI_Status *s, int rc, MPI_Datatype type,
                        host_recv_end_t *end);
/* Take a posted receive back from MPI: MPI_Cancel, waited within comm's GMPI_TIMEOUT (driving
 * the engines). *taken: no message reached it; otherwise MPI matched one first and the receive
 * ended with it (*end; framed: unframe it). */
gmpi_status_t gmpi_host_take_back(gmpi_comm_t comm, MPI_Request *mpi, MPI_Datatype type, int *taken,
                                  host_recv_end_t *end);
/* One MPI_Test of a request not ended yet: *ended once MPI finished it (a truncated receive
 * included); a receive's ending goes to *end (NULL for a send). Other MPI errors are returned. */
gmpi_status_t gmpi_host_test_one(int full, MPI_Request *mpi, MPI_Datatype type, int *ended,
                                 host_recv_end_t *end);
/* GMPI_CHECK, a receive still waiting in *mpi (one that names another rank and a tag; others
 * return at once): is a message with its source and tag but another element size waiting in
 * MPI? Then the receive is taken back, that message received and dropped (its send completes, and
 * the pair stays usable), and the receive ends (*ended, *end with other_elem_size) for
 * GMPI_ERR_MISMATCH. When MPI matched the receive meanwhile it ends as it ended (*ended, *end;
 * framed: unframe it). Its waits are polled within comm's GMPI_TIMEOUT. Detection depends on
 * timing: a message of the receive's own size arriving within the polls matches, and the erroneous
 * program goes unflagged. */
gmpi_status_t gmpi_host_other_size(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *a,
                                   MPI_Request *mpi, MPI_Datatype type, int *ended,
                                   host_recv_end_t *end);
/* A receive's outcome from how it ended: its status (count in a's elements; 0 when truncated,
 * core/request.h), and an error
 * described for the call that waits it (truncated, failed, another dtype under GMPI_CHECK, or
 * not whole elements). */
gmpi_status_t gmpi_host_recv_result(const gmpi_p2p_args_t *a, const host_recv_end_t *e,
                                    gmpi_msg_status_t *status);

#endif
