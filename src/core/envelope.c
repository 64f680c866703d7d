/* SPDX-License-Identifier: BSD-3-Clause */
#include "envelope.h"
#include "envelope_wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "log.h"
#include "match.h"
#include "oob.h"
#include "progress.h"
#include "request.h"
#include "reuse.h"
#include "vote.h"
#include "wait.h"

#define N_POSTED 8 /* envelope receives kept posted */

#define WIRE_MAX (sizeof(wire_t) + GMPI_ENV_EAGER_BYTES)

struct env_send;

/* Objects the engine makes and drops once per message -- sends, receives, messages, envelopes
 * with little payload -- kept for reuse under the engine's lock (reuse.h), SPARES_KEPT of each. */
#define SPARES_KEPT 32

/* An envelope on its way out. A message's waits in its peer's held queue until its data is
 * ready (answers skip it); then the channel reads it until op completes. */
typedef struct out_msg {
  struct out_msg *next; /* the peer's held queue, then the engine's out list */
  gmpi_chan_op_t *op;
  void *ready;           /* mover handle: the eager copy or the exposure still running */
  struct env_send *send; /* its send until it goes out (NULL once abandoned): an eager copy
                          * completes it then; answers wait for it (gmpi_env_answer_check) */
  int spare;             /* made from the engine's spares (payload up to OUT_SPARE_PAYLOAD) */
  wire_t w;
  unsigned char payload[]; /* eager data, right after the header */
} out_msg_t;

/* How a message's data moves: in its envelope, pulled by the receiver, on the pair's link, over
 * the control channel (both ends host memory), or from its own sender's buffer. */
typedef enum { P_EAGER = 0, P_PULL, P_LINK, P_CHAN, P_SELF } proto_t;

/* A message known to the receiver. */
typedef struct env_msg {
  gmpi_match_msg_t m; /* first: the matcher's view */
  proto_t proto;
  void *data;        /* eager (or buffered self) data in host memory, or NULL */
  void *own;         /* the memory data lies in when the message owns it: freed with it */
  uint32_t blob_len; /* pull: the sender's buffer description */
  uint8_t blob[GMPI_MOVER_BLOB_BYTES];
  gmpi_request_t req;       /* the receive it is matched to, or NULL */
  gmpi_request_t self_send; /* P_SELF: the send whose buffer holds the data */
  void *dst;                /* rendezvous: the receive's buffer, kept if the receive is given up */
  void *handle;             /* pull, link transfer or copy into the receive buffer in flight */
  gmpi_chan_op_t *chan_op;  /* P_CHAN: the channel's receive of the data, in flight */
  int host_src;             /* the sender's buffer is host memory (W_RTS_HOST) */
  int ack;                  /* a synchronous send's eager message: FIN once it has landed */
  void *filling; /* self: the eager copy into data, or the sender's post mark (core/mover.h) */
  struct env_send *fill_send; /* self eager: the send that copy completes (NULL: abandoned) */
  int orphan;                 /* its receive was abandoned while the data moved */
  void *mark;                 /* its receive's post mark, until it passes (the marked list) */
  gmpi_status_t verdict;      /* judge's, kept while the mark is pending */
  struct env_msg *next;       /* the moving, marked, awaiting-GO or held self list */
} env_msg_t;

typedef struct {
  gmpi_match_recv_t m; /* first: the matcher's view */
  env_msg_t *msg;      /* matched message, or NULL while posted */
  gmpi_request_t req;  /* the request this receive belongs to */
  void *mark;          /* where the program's stream was at the post (mover's), until matched */
} env_recv_t;

/* A send, sender side. */
typedef struct env_send {
  uint64_t seq;
  uint32_t offered; /* what it awaits an answer to: W_RTS_PULL, _LINK, _HOST, W_EAGER_SYNC */
  int complete;     /* eager: copy done; pull, synchronous eager: at FIN; link: moved or FIN */
  void *handle;     /* link transfer in flight */
  gmpi_chan_op_t *chan_op; /* the channel's send of the data, in flight (P_CHAN) */
  env_msg_t *self_msg;     /* P_SELF: the message until it is delivered */
  out_msg_t *held_out;     /* its envelope until sent (the copy or the mark still runs) */
  env_msg_t *held_self;    /* self eager: its message while the copy runs */
  gmpi_request_t req;
  struct env_send *next; /* its peer's list of sends waiting for the receiver */
} env_send_t;

typedef struct {
  uint64_t next_in_seq, next_out_seq; /* message numbers, both directions */
  uint64_t link_next;                 /* next link position (leader assigns, follower checks) */
  int link_ready;                     /* opened (leader) or joined (follower) */
  env_send_t *waiting;                /* rendezvous sends not yet matched by the receiver */
  env_msg_t *awaiting_go;             /* follower receiver: matched, waiting for a position */
  out_msg_t *held, *held_tail;        /* message envelopes not yet sent, in sequence order */
} env_peer_t;

struct gmpi_envelope_engine {
  gmpi_comm_t comm;
  const gmpi_oob_ops_t *oob; /* the comm's out-of-band functions (core/oob.h) */
  gmpi_chan_t *ctrl;         /* the envelopes' control channel */
  const gmpi_mover_t *mover;
  void *mctx;
  gmpi_match_t match;
  env_peer_t *peers; /* one per rank */
  unsigned char *in_buf[N_POSTED];
  gmpi_chan_op_t *in_op[N_POSTED];
  int in_head;               /* the posted receive the channel fills next */
  out_msg_t *out, *out_tail; /* envelopes the channel is still sending, oldest first */
  env_msg_t *moving;         /* receiver side transfers and copies in flight */
  env_msg_t *marked; /* matched, waiting for the program's stream to pass the receive's post */
  int n_held;        /* message envelopes held, all peers */
  int n_out;         /* envelopes on the out list */
  int n_live;        /* sends and receives posted and not yet released */
  int n_awaiting_go; /* messages on the peers' awaiting_go lists */
  /* Whether a pass could move anything (note_wanted): other threads' waits skip the engine
   * while it is off (core/progress.h). */
  gmpi_progress_flag_t wanted;
  gmpi_spares_t spare_sends, spare_recvs, spare_msgs, spare_outs;
  /* The eager message being taken in whose data still lies in its channel slot (arrived):
   * a receive may take it from there; whatever still reads it afterwards gets it for itself. */
  env_msg_t *borrower;
  env_msg_t *self_held, *self_held_tail; /* self messages not yet known to the matcher */
  /* Everything above, the mover's context and the control channel are touched only under
   * this lock. A thread takes it to post, test, probe, cancel and abandon; a wait of any
   * thread driving every engine (core/progress.h) only tries it and skips the engine when it
   * is held -- its holder is making the progress. Nothing done under it waits or drives
   * progress (mover calls only start work: core/mover.h), so it is never taken twice by one
   * thread and is an ordinary mutex. */
  pthread_mutex_t lock;
};

static int is_leader(const struct gmpi_envelope_engine *env, int peer) {
  return env->comm->rank < peer;
}

/* The channel's data tag of a message: its number, which no other message in flight between
 * the pair shares unless GMPI_CHAN_DATA_TAGS rendezvous messages are. */
static int data_tag(uint64_t seq) { return (int)(seq % GMPI_CHAN_DATA_TAGS); }

/* ---- spares ----------------------------------------------------------------------------- */

/* Largest eager payload of an envelope made from the spares. */
#define OUT_SPARE_PAYLOAD 256

static void spares_init(struct gmpi_envelope_engine *env) {
  gmpi_spares_init(&env->spare_sends, sizeof(env_send_t), SPARES_KEPT);
  gmpi_spares_init(&env->spare_recvs, sizeof(env_recv_t), SPARES_KEPT);
  gmpi_spares_init(&env->spare_msgs, sizeof(env_msg_t), SPARES_KEPT);
  gmpi_spares_init(&env->spare_outs, sizeof(out_msg_t) + OUT_SPARE_PAYLOAD, SPARES_KEPT);
}

/* A send's or receive's state is no longer needed (done, cancelled or given up). */
static void send_released(struct gmpi_envelope_engine *env, void *es) {
  gmpi_spare_give(&env->spare_sends, es);
  env->n_live--;
}
static void recv_released(struct gmpi_envelope_engine *env, void *er) {
  gmpi_spare_give(&env->spare_recvs, er);
  env->n_live--;
}

/* ---- sending envelopes ----------------------------------------------------------------- */

static gmpi_status_t new_out(struct gmpi_envelope_engine *env, size_t payload, out_msg_t **out) {
  int spare = payload <= OUT_SPARE_PAYLOAD;
  out_msg_t *o = spare ? gmpi_spare_take(&env->spare_outs) : calloc(1, sizeof(*o) + payload);
  if (!o) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an envelope");
  o->spare = spare;
  *out = o;
  return GMPI_SUCCESS;
}

static void free_out(struct gmpi_envelope_engine *env, out_msg_t *o) {
  if (o->spare)
    gmpi_spare_give(&env->spare_outs, o);
  else
    free(o);
}

/* Append o to the queue (*head, *tail), which keeps its order. */
static void queue_out(out_msg_t **head, out_msg_t **tail, out_msg_t *o) {
  o->next = NULL;
  if (*tail)
    (*tail)->next = o;
  else
    *head = o;
  *tail = o;
}

static gmpi_status_t send_out(struct gmpi_envelope_engine *env, int dest, out_msg_t *o,
                              size_t payload) {
  gmpi_status_t st = env->oob->chan_send(env->ctrl, dest, &o->w, sizeof(wire_t) + payload, &o->op);
  if (st != GMPI_SUCCESS) {
    free_out(env, o);
    return st;
  }
  queue_out(&env->out, &env->out_tail, o);
  env->n_out++;
  return GMPI_SUCCESS;
}

/* A control envelope (no data) to dest. */
static gmpi_status_t send_ctrl(struct gmpi_envelope_engine *env, int dest, wire_kind_t kind,
                               uint64_t seq, uint64_t k, const void *blob, size_t blob_len) {
  out_msg_t *o = NULL;
  GMPI_CHECK(new_out(env, 0, &o));
  o->w = (wire_t){.kind = kind, .seq = seq, .k = k, .blob_len = (uint32_t)blob_len};
  if (blob_len) memcpy(o->w.blob, blob, blob_len);
  return send_out(env, dest, o, 0);
}

/* Reclaim the envelopes MPI has sent, oldest first, up to the first it has not: a test of a
 * pending one also drives MPI's progress, which may be what it waits for (a full shared-memory
 * queue, a message above MPI's eager size), and stopping there keeps a slow peer from costing a
 * test of every envelope behind it at every call. */
static gmpi_status_t test_out(struct gmpi_envelope_engine *env) {
  while (env->out) {
    out_msg_t *o = env->out;
    int flag = 0;
    GMPI_CHECK(env->oob->chan_test(&o->op, &flag, NULL, NULL));
    if (!flag) return GMPI_SUCCESS;
    env->out = o->next;
    if (!env->out) env->out_tail = NULL;
    env->n_out--;
    free_out(env, o);
  }
  return GMPI_SUCCESS;
}

/* No request waits for its envelope to leave -- an eager send completes when its copy is
 * taken, a rendezvous at its FIN -- so a pass tests the out list only once OUT_TESTED_AT
 * envelopes are on it (and a post too: sends that finish at once run no pass), or when nothing
 * else is left: a peer may still wait for one of them, and MPI may need this rank's progress to
 * deliver it, so the engine stays wanted (note_wanted) until the list is empty. */
#define OUT_TESTED_AT 8

static gmpi_status_t reclaim_out(struct gmpi_envelope_engine *env) {
  if (env->n_out >= OUT_TESTED_AT || (env->n_out && !env->n_live)) return test_out(env);
  return GMPI_SUCCESS;
}

/* ---- completing receives ---------------------------------------------------------------- */

static void complete_recv(struct gmpi_envelope_engine *env, gmpi_request_t req,
                          const env_msg_t *msg, gmpi_status_t result) {
  recv_released(env, req->be);
  req->be = NULL;
  size_t count = result == GMPI_SUCCESS ? msg->m.bytes / gmpi_dtype_size(req->args.dtype) : 0;
  req->status = (gmpi_msg_status_t){msg->m.source, msg->m.tag, count}; /* request.h */
  req->result = result;
  req->done = 1;
}

static void free_msg(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  free(msg->own);
  gmpi_spare_give(&env->spare_msgs, msg);
}

/* Give msg bytes of data of its own (its eager data is kept until a receive takes it). */
static gmpi_status_t own_data(env_msg_t *msg, size_t bytes) {
  if (!(msg->own = malloc(bytes)))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to keep a %zu-byte message", bytes);
  msg->data = msg->own;
  return GMPI_SUCCESS;
}

/* Is the message acceptable to its receive? Describes the failure when not. */
static gmpi_status_t judge(struct gmpi_envelope_engine *env, const env_msg_t *msg,
                           gmpi_request_t req) {
  const gmpi_p2p_args_t *a = &req->args;
  size_t es = gmpi_dtype_size(a->dtype);
  if (msg->m.bytes > a->count * es)
    return gmpi_error(GMPI_ERR_TRUNCATE,
                      "irecv from rank %d tag %d: the message has %zu bytes, longer than the "
                      "receive buffer of %zu %s elements",
                      msg->m.source, msg->m.tag, msg->m.bytes, a->count, gmpi_dtype_name(a->dtype));
  if (env->comm->cfg.check && msg->m.dtype != (int)a->dtype)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: irecv from rank %d tag %d expects %s but rank %d sent %s",
                      msg->m.source, msg->m.tag, gmpi_dtype_name(a->dtype), msg->m.source,
                      gmpi_dtype_name((gmpi_dtype_t)msg->m.dtype));
  if (msg->m.bytes % es)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "irecv from rank %d tag %d: %zu bytes are not a whole number of %s "
                      "elements (the sender used another dtype)",
                      msg->m.source, msg->m.tag, msg->m.bytes, gmpi_dtype_name(a->dtype));
  return GMPI_SUCCESS;
}

static void start_moving(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  msg->next = env->moving;
  env->moving = msg;
}

/* A message's data is in its receive buffer (or refused, result saying why): the receive is
 * done, a self send whose buffer held the data too, and a pulled sender is told. */
static gmpi_status_t landed(struct gmpi_envelope_engine *env, env_msg_t *msg,
                            gmpi_status_t result) {
  gmpi_status_t st = GMPI_SUCCESS;
  if (msg->proto == P_PULL || msg->ack)
    st = send_ctrl(env, msg->m.source, W_FIN, msg->m.seq, 0, NULL, 0);
  if (msg->self_send) {
    env_send_t *es = msg->self_send->be;
    es->self_msg = NULL;
    es->complete = 1;
  }
  if (!msg->orphan) complete_recv(env, msg->req, msg, result);
  if (env->borrower == msg) env->borrower = NULL;
  free_msg(env, msg);
  return st;
}

/* Deliver a message whose data is here already (eager) or in our own sender's buffer: start
 * the copy into the receive buffer; the receive is done when it has landed. */
static gmpi_status_t deliver_local(struct gmpi_envelope_engine *env, env_msg_t *msg,
                                   gmpi_status_t verdict) {
  gmpi_status_t st = verdict;
  void *copy = NULL;
  if (st == GMPI_SUCCESS && msg->m.bytes) {
    if (msg->data)
      st = env->mover->from_host(env->mctx, msg->dst, msg->data, msg->m.bytes, &copy);
    else if (msg->self_send)
      st =
          env->mover->self_copy(env->mctx, msg->dst, msg->self_send->args.buf, msg->m.bytes, &copy);
    else
      st = gmpi_error(GMPI_ERR_STATE,
                      "irecv from rank %d tag %d: the matching send was abandoned after a failure",
                      msg->m.source, msg->m.tag);
  }
  if (!copy) return landed(env, msg, st);
  msg->handle = copy;
  start_moving(env, msg);
  return GMPI_SUCCESS;
}

/* The leader's next position on the link to peer; opens the link the first time, writing the
 * introduction the follower needs into blob. */
static gmpi_status_t link_position(struct gmpi_envelope_engine *env, int peer, uint64_t *k,
                                   uint8_t *blob, size_t *blob_len) {
  env_peer_t *p = &env->peers[peer];
  *blob_len = 0;
  if (!p->link_ready) {
    GMPI_CHECK(env->mover->link_open(env->mctx, peer, blob, blob_len));
    p->link_ready = 1;
  }
  *k = p->link_next++;
  return GMPI_SUCCESS;
}

/* The follower's side of a position: join the link on its first one, check the order. */
static gmpi_status_t link_follow(struct gmpi_envelope_engine *env, int peer, const wire_t *w) {
  env_peer_t *p = &env->peers[peer];
  if (!p->link_ready) {
    if (!w->blob_len)
      return gmpi_error(GMPI_ERR_INTERNAL, "first link position from rank %d has no introduction",
                        peer);
    GMPI_CHECK(env->mover->link_join(env->mctx, peer, w->blob, w->blob_len));
    p->link_ready = 1;
  }
  if (w->k != p->link_next)
    return gmpi_error(GMPI_ERR_INTERNAL, "link with rank %d: position %llu, expected %llu", peer,
                      (unsigned long long)w->k, (unsigned long long)p->link_next);
  p->link_next++;
  return GMPI_SUCCESS;
}

/* A rendezvous message met its receive: start moving it (or refuse it with FIN). */
static gmpi_status_t start_rendezvous(struct gmpi_envelope_engine *env, env_msg_t *msg,
                                      gmpi_status_t verdict) {
  int src = msg->m.source;
  if (verdict != GMPI_SUCCESS) { /* nothing moves; the sender is done */
    GMPI_CHECK(send_ctrl(env, src, W_FIN, msg->m.seq, 0, NULL, 0));
    if (!msg->orphan) complete_recv(env, msg->req, msg, verdict);
    free_msg(env, msg);
    return GMPI_SUCCESS;
  }
  if (msg->proto == P_PULL) {
    GMPI_CHECK(env->mover->pull(env->mctx, src, msg->blob, msg->blob_len, msg->dst, msg->m.bytes,
                                &msg->handle));
    start_moving(env, msg);
    return GMPI_SUCCESS;
  }
  if (msg->host_src && env->mover->host_mem && env->mover->host_mem(env->mctx, msg->dst)) {
    /* Both ends host memory: MPI moves it, as it would without gmpi -- no device staging, no
     * link, no link position (the link's order is untouched). The answer goes first: when it
     * cannot go, no receive is left posted under the message's tag. */
    GMPI_CHECK(send_ctrl(env, src, W_CTS_CHAN, msg->m.seq, 0, NULL, 0));
    GMPI_CHECK(env->oob->chan_recv_data(env->ctrl, src, data_tag(msg->m.seq), msg->dst,
                                        msg->m.bytes, &msg->chan_op));
    msg->proto = P_CHAN;
    start_moving(env, msg);
    return GMPI_SUCCESS;
  }
  if (!is_leader(env, src)) { /* the sender assigns the position */
    GMPI_CHECK(send_ctrl(env, src, W_RTR, msg->m.seq, 0, NULL, 0));
    msg->next = env->peers[src].awaiting_go;
    env->peers[src].awaiting_go = msg;
    env->n_awaiting_go++;
    return GMPI_SUCCESS;
  }
  uint64_t k;
  uint8_t blob[GMPI_MOVER_BLOB_BYTES];
  size_t blob_len;
  GMPI_CHECK(link_position(env, src, &k, blob, &blob_len));
  GMPI_CHECK(env->mover->link_recv(env->mctx, src, k, msg->dst, msg->m.bytes, &msg->handle));
  start_moving(env, msg);
  return send_ctrl(env, src, W_CTS, msg->m.seq, k, blob, blob_len);
}

/* A matched message whose receive's post the program's stream has passed: start moving it. */
static gmpi_status_t start_matched(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  if (msg->proto == P_EAGER || msg->proto == P_SELF) return deliver_local(env, msg, msg->verdict);
  return start_rendezvous(env, msg, msg->verdict);
}

/* A message met its receive (at arrival, or when the receive was posted). Nothing is written
 * into the receive buffer (nor a link position taken for it) before the program's stream has
 * passed the receive's post: its mark, tested by progress (core/mover.h). */
static gmpi_status_t bind(struct gmpi_envelope_engine *env, env_msg_t *msg, gmpi_request_t req) {
  env_recv_t *er = req->be;
  msg->req = req;
  msg->dst = req->args.buf;
  er->msg = msg;
  msg->mark = er->mark;
  er->mark = NULL;
  msg->verdict = judge(env, msg, req);
  if (!msg->mark) return start_matched(env, msg);
  msg->next = env->marked;
  env->marked = msg;
  return GMPI_SUCCESS;
}

static gmpi_status_t test_moving(struct gmpi_envelope_engine *env) {
  for (env_msg_t **link = &env->moving; *link;) {
    env_msg_t *msg = *link;
    int done = 1;
    if (msg->handle) GMPI_CHECK(env->mover->test(env->mctx, msg->handle, &done));
    if (msg->chan_op) GMPI_CHECK(env->oob->chan_test(&msg->chan_op, &done, NULL, NULL));
    if (!done) {
      link = &msg->next;
      continue;
    }
    msg->handle = NULL;
    *link = msg->next;
    GMPI_CHECK(landed(env, msg, GMPI_SUCCESS));
  }
  return GMPI_SUCCESS;
}

/* ---- receiving envelopes ---------------------------------------------------------------- */

/* A message is known (envelope arrived, or a self send): try to match it. */
static gmpi_status_t arrive(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  gmpi_match_recv_t *r = gmpi_match_arrive(&env->match, &msg->m);
  if (!r) return GMPI_SUCCESS;
  return bind(env, msg, ((env_recv_t *)r)->req);
}

/* An eager message that arrived in slot and still reads its data there: no receive took it yet,
 * its receive's mark has not passed, or the copy into the receive runs. A receive that took
 * it at once copied straight from the slot, and a copy that finished before the call returned
 * left nothing lent: no allocation, no second copy. Otherwise the message gets its data for
 * itself: the slot's buffer when a copy reads it now (the slot gets a new one), else a copy. */
static gmpi_status_t keep_lent(struct gmpi_envelope_engine *env, int slot) {
  env_msg_t *msg = env->borrower;
  if (!msg) return GMPI_SUCCESS;
  env->borrower = NULL;
  if (msg->handle) {
    msg->own = env->in_buf[slot];
    env->in_buf[slot] = NULL; /* poll_envelopes gives the slot a new buffer */
    return GMPI_SUCCESS;
  }
  const void *lent = msg->data;
  msg->data = NULL; /* lost: a receive of it fails rather than read the slot's next envelope */
  GMPI_CHECK(own_data(msg, msg->m.bytes)); /* the comm fails with this error */
  memcpy(msg->data, lent, msg->m.bytes);
  return GMPI_SUCCESS;
}

static gmpi_status_t message_arrived(struct gmpi_envelope_engine *env, int src, int slot,
                                     const wire_t *w, const unsigned char *payload) {
  env_peer_t *p = &env->peers[src];
  if (w->seq != p->next_in_seq)
    return gmpi_error(GMPI_ERR_INTERNAL, "envelope from rank %d has sequence %llu, expected %llu",
                      src, (unsigned long long)w->seq, (unsigned long long)p->next_in_seq);
  p->next_in_seq++;
  env_msg_t *msg = gmpi_spare_take(&env->spare_msgs);
  if (!msg) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an envelope");
  msg->m = (gmpi_match_msg_t){
      .source = src, .tag = w->tag, .bytes = w->bytes, .dtype = w->dtype, .seq = w->seq};
  msg->ack = w->kind == W_EAGER_SYNC;
  msg->proto = w->kind == W_EAGER || msg->ack ? P_EAGER : w->kind == W_RTS_PULL ? P_PULL : P_LINK;
  msg->host_src = w->kind == W_RTS_HOST;
  if (msg->proto == P_EAGER && w->bytes) { /* lent until arrive returns (keep_lent) */
    msg->data = (void *)payload;
    env->borrower = msg;
  }
  msg->blob_len = w->blob_len;
  memcpy(msg->blob, w->blob, w->blob_len);
  GMPI_TRACE("envelope from %d: tag %d, %zu bytes, seq %llu, %s", src, msg->m.tag, msg->m.bytes,
             (unsigned long long)msg->m.seq,
             msg->proto == P_EAGER  ? "eager"
             : msg->proto == P_PULL ? "pull"
                                    : "link");
  gmpi_status_t st = arrive(env, msg);
  gmpi_status_t kept = keep_lent(env, slot);
  return st != GMPI_SUCCESS ? st : kept;
}

/* Where our send to peer numbered seq that waits for its receiver is listed, or NULL. */
static env_send_t **waiting_link(env_peer_t *p, uint64_t seq) {
  for (env_send_t **link = &p->waiting; *link; link = &(*link)->next)
    if ((*link)->seq == seq) return link;
  return NULL;
}

/* Unlink and return our send to peer numbered seq that waits for its receiver. */
static env_send_t *take_waiting(env_peer_t *p, uint64_t seq) {
  env_send_t **link = waiting_link(p, seq);
  if (!link) return NULL;
  env_send_t *es = *link;
  *link = es->next;
  return es;
}

static env_msg_t *take_awaiting_go(struct gmpi_envelope_engine *env, env_peer_t *p, uint64_t seq) {
  for (env_msg_t **link = &p->awaiting_go; *link; link = &(*link)->next) {
    env_msg_t *msg = *link;
    if (msg->m.seq != seq) continue;
    *link = msg->next;
    env->n_awaiting_go--;
    return msg;
  }
  return NULL;
}

/* FIN, RTR, CTS, CTS_CHAN about our send seq to src. A send given up meanwhile (after a failure) is
 * no longer listed: the answer is dropped, and the comm is failed already. */
static gmpi_status_t send_answered(struct gmpi_envelope_engine *env, int src, const wire_t *w) {
  env_send_t **link = waiting_link(&env->peers[src], w->seq);
  if (!link) {
    gmpi_log(GMPI_LOG_INFO, "rank %d answered about send %llu, which was given up", src,
             (unsigned long long)w->seq);
    return GMPI_SUCCESS;
  }
  env_send_t *es = *link;
  /* an answer it cannot take fails the pass (and the comm); the send stays listed till then */
  GMPI_CHECK(
      gmpi_env_answer_check(w->kind, es->offered, !es->held_out, is_leader(env, src), src, w->seq));
  *link = es->next;
  if (w->kind == W_FIN) {
    es->complete = 1;
    return GMPI_SUCCESS;
  }
  const gmpi_p2p_args_t *a = &es->req->args;
  size_t bytes = gmpi_p2p_bytes(a);
  if (w->kind == W_CTS_CHAN)
    return env->oob->chan_send_data(env->ctrl, src, data_tag(es->seq), a->buf, bytes, &es->chan_op);
  if (w->kind == W_CTS) {
    GMPI_CHECK(link_follow(env, src, w));
    return env->mover->link_send(env->mctx, src, w->k, a->buf, bytes, &es->handle);
  }
  uint64_t k; /* W_RTR: we lead */
  uint8_t blob[GMPI_MOVER_BLOB_BYTES];
  size_t blob_len;
  GMPI_CHECK(link_position(env, src, &k, blob, &blob_len));
  GMPI_CHECK(env->mover->link_send(env->mctx, src, k, a->buf, bytes, &es->handle));
  return send_ctrl(env, src, W_GO, w->seq, k, blob, blob_len);
}

static gmpi_status_t go_arrived(struct gmpi_envelope_engine *env, int src, const wire_t *w) {
  env_msg_t *msg = take_awaiting_go(env, &env->peers[src], w->seq);
  if (!msg)
    return gmpi_error(GMPI_ERR_INTERNAL, "rank %d sent a link position for unknown message %llu",
                      src, (unsigned long long)w->seq);
  GMPI_CHECK(link_follow(env, src, w));
  GMPI_CHECK(env->mover->link_recv(env->mctx, src, w->k, msg->dst, msg->m.bytes, &msg->handle));
  start_moving(env, msg);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_env_wire_check(const void *buf, size_t len, int src, int nranks) {
  const wire_t *w = buf;
  if (src < 0 || src >= nranks)
    return gmpi_error(GMPI_ERR_INTERNAL, "envelope from rank %d, outside the %d ranks", src,
                      nranks);
  int eager = w->kind == W_EAGER || w->kind == W_EAGER_SYNC;
  if (len < sizeof(wire_t) || (eager && len - sizeof(wire_t) < w->bytes))
    return gmpi_error(GMPI_ERR_INTERNAL, "malformed envelope of %zu bytes from rank %d", len, src);
  if (w->blob_len > GMPI_MOVER_BLOB_BYTES)
    return gmpi_error(GMPI_ERR_INTERNAL,
                      "malformed envelope from rank %d: blob_len %u, more than the %d bytes "
                      "an envelope carries",
                      src, (unsigned)w->blob_len, GMPI_MOVER_BLOB_BYTES);
  /* a message's dtype divides its bytes (probe, status): 0 would be a division by zero */
  int message = eager || w->kind == W_RTS_PULL || w->kind == W_RTS_LINK || w->kind == W_RTS_HOST;
  if (message && !gmpi_dtype_in_range((gmpi_dtype_t)w->dtype))
    return gmpi_error(GMPI_ERR_INTERNAL, "malformed envelope from rank %d: dtype %d", src,
                      (int)w->dtype);
  return GMPI_SUCCESS;
}

static const char *wire_kind_name(uint32_t kind) {
  static const char *const names[] = {"?",   "EAGER", "RTS_PULL", "RTS_LINK", "FIN",       "RTR",
                                      "CTS", "GO",    "RTS_HOST", "CTS_CHAN", "EAGER_SYNC"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

gmpi_status_t gmpi_env_answer_check(uint32_t answer, uint32_t offered, int sent, int we_lead,
                                    int src, uint64_t seq) {
  if (!sent)
    return gmpi_error(GMPI_ERR_INTERNAL,
                      "rank %d answered send %llu with %s before its envelope went out", src,
                      (unsigned long long)seq, wire_kind_name(answer));
  int link = offered == W_RTS_LINK || offered == W_RTS_HOST;
  int fits = answer == W_FIN || (answer == W_CTS_CHAN && offered == W_RTS_HOST) ||
             (answer == W_RTR && link && we_lead) || (answer == W_CTS && link && !we_lead);
  if (fits) return GMPI_SUCCESS;
  return gmpi_error(GMPI_ERR_INTERNAL,
                    "rank %d answered send %llu, sent as %s, with %s, which that send cannot "
                    "take (%s assigns the pair's link positions)",
                    src, (unsigned long long)seq, wire_kind_name(offered), wire_kind_name(answer),
                    we_lead ? "this rank" : "the receiver");
}

/* The envelope of len bytes in channel slot from rank src. */
static gmpi_status_t wire_arrived(struct gmpi_envelope_engine *env, int src, int slot, size_t len) {
  const unsigned char *buf = env->in_buf[slot];
  const wire_t *w = (const wire_t *)buf;
  GMPI_CHECK(gmpi_env_wire_check(buf, len, src, env->comm->size));
  switch (w->kind) {
  case W_EAGER:
  case W_EAGER_SYNC:
  case W_RTS_PULL:
  case W_RTS_LINK:
  case W_RTS_HOST: return message_arrived(env, src, slot, w, buf + sizeof(wire_t));
  case W_FIN:
  case W_RTR:
  case W_CTS:
  case W_CTS_CHAN: return send_answered(env, src, w);
  case W_GO: return go_arrived(env, src, w);
  default:
    return gmpi_error(GMPI_ERR_INTERNAL, "envelope of unknown kind %u from rank %d", w->kind, src);
  }
}

static gmpi_status_t post_incoming(struct gmpi_envelope_engine *env, int i) {
  return env->oob->chan_recv(env->ctrl, env->in_buf[i], WIRE_MAX, &env->in_op[i]);
}

/* The channel fills the posted receives in the order they were posted: take them in that
 * order, so each sender's envelopes are seen in its order. */
static gmpi_status_t poll_envelopes(struct gmpi_envelope_engine *env) {
  for (;;) {
    int i = env->in_head, flag = 0, src = -1;
    size_t len = 0;
    GMPI_CHECK(env->oob->chan_test(&env->in_op[i], &flag, &src, &len));
    if (!flag) return GMPI_SUCCESS;
    env->in_head = (i + 1) % N_POSTED;
    gmpi_status_t st = wire_arrived(env, src, i, len);
    if (!env->in_buf[i] && !(env->in_buf[i] = malloc(WIRE_MAX))) {
      GMPI_CHECK(st); /* the first failure is the one described */
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an envelope buffer");
    }
    GMPI_CHECK(post_incoming(env, i));
    GMPI_CHECK(st);
  }
}

/* ---- messages held until their data is ready ------------------------------------------- */

/* A message's envelope waits in its peer's queue: its eager copy or its exposure runs, or one
 * ahead of it still waits. Receivers take a sender's envelopes in sequence order, so the
 * queue keeps that order: a pending copy never lets a later message overtake it. Answers
 * (FIN, RTR, CTS, GO) go out at once -- none depends on a message envelope sent after it,
 * and one held behind a pending copy could hold up a peer the copy waits for. */
static void hold(struct gmpi_envelope_engine *env, int dest, out_msg_t *o) {
  queue_out(&env->peers[dest].held, &env->peers[dest].held_tail, o);
  env->n_held++;
}

/* Has handle (NULL: nothing was running) finished? Released when it has. */
static gmpi_status_t ready_now(struct gmpi_envelope_engine *env, void **handle, int *ready) {
  *ready = 1;
  if (!*handle) return GMPI_SUCCESS;
  GMPI_CHECK(env->mover->test(env->mctx, *handle, ready));
  if (*ready) *handle = NULL;
  return GMPI_SUCCESS;
}

/* Send dest's held envelopes whose data is ready, in order, up to the first still waiting. */
static gmpi_status_t flush_peer(struct gmpi_envelope_engine *env, int dest) {
  env_peer_t *p = &env->peers[dest];
  while (p->held) {
    out_msg_t *o = p->held;
    int ready = 0;
    GMPI_CHECK(ready_now(env, &o->ready, &ready));
    if (!ready) return GMPI_SUCCESS;
    p->held = o->next;
    if (!p->held) p->held_tail = NULL;
    env->n_held--;
    if (o->send) { /* going out: an eager copy has the data, the sender's buffer is free */
      o->send->complete = o->w.kind == W_EAGER; /* synchronous and rendezvous: at the answer */
      o->send->held_out = NULL;
      o->send = NULL;
    }
    o->next = NULL;
    int eager = o->w.kind == W_EAGER || o->w.kind == W_EAGER_SYNC;
    GMPI_CHECK(send_out(env, dest, o, eager ? o->w.bytes : 0));
  }
  return GMPI_SUCCESS;
}

/* A send the eager protocol may complete before its receive (a copy kept). */
static int eager_sized(size_t bytes, const gmpi_p2p_args_t *a) {
  return bytes <= GMPI_ENV_EAGER_BYTES && !a->sync;
}

/* Self messages reach the matcher in the order they were sent, each once its eager copy
 * holds the data (or at once: a larger one is read from the sender's buffer). */
static gmpi_status_t flush_self(struct gmpi_envelope_engine *env) {
  while (env->self_held) {
    env_msg_t *msg = env->self_held;
    int ready = 0;
    GMPI_CHECK(ready_now(env, &msg->filling, &ready));
    if (!ready) return GMPI_SUCCESS;
    /* The receive it counted on at the post may be gone by now (cancelled, or taken by another
     * rank's message for a wildcard): then it is copied out as any eager self send is, so the
     * send still completes with no receive (docs/api.md's promise). */
    env_send_t *es = msg->self_send ? msg->self_send->be : NULL;
    if (es && eager_sized(msg->m.bytes, &msg->self_send->args) &&
        !gmpi_match_would_take(&env->match, msg->m.source, msg->m.tag)) {
      GMPI_CHECK(own_data(msg, msg->m.bytes));
      GMPI_CHECK(env->mover->self_copy(env->mctx, msg->data, msg->self_send->args.buf, msg->m.bytes,
                                       &msg->filling));
      msg->self_send = NULL;
      es->self_msg = NULL;
      msg->fill_send = es;
      es->held_self = msg;
      GMPI_CHECK(ready_now(env, &msg->filling, &ready));
      if (!ready) return GMPI_SUCCESS;
    }
    env->self_held = msg->next;
    if (!env->self_held) env->self_held_tail = NULL;
    msg->next = NULL;
    if (msg->fill_send) {
      msg->fill_send->complete = 1;
      msg->fill_send->held_self = NULL;
      msg->fill_send = NULL;
    }
    GMPI_CHECK(arrive(env, msg));
  }
  return GMPI_SUCCESS;
}

/* Matched messages whose receive's mark has passed start moving. */
static gmpi_status_t test_marked(struct gmpi_envelope_engine *env) {
  for (env_msg_t **link = &env->marked; *link;) {
    env_msg_t *msg = *link;
    int ready = 0;
    GMPI_CHECK(ready_now(env, &msg->mark, &ready));
    if (!ready) {
      link = &msg->next;
      continue;
    }
    *link = msg->next;
    msg->next = NULL;
    GMPI_CHECK(start_matched(env, msg));
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t flush_held(struct gmpi_envelope_engine *env) {
  GMPI_CHECK(flush_self(env));
  for (int p = 0; env->n_held && p < env->comm->size; p++)
    GMPI_CHECK(flush_peer(env, p));
  return GMPI_SUCCESS;
}

/* ---- progress --------------------------------------------------------------------------- */

/* Every mover call here only starts or tests work (core/mover.h): nothing reached from here
 * waits or drives progress, so no progress ever runs inside another on this engine. */
static gmpi_status_t progress(struct gmpi_envelope_engine *env) {
  GMPI_CHECK(poll_envelopes(env));
  if (env->mover->progress) GMPI_CHECK(env->mover->progress(env->mctx));
  GMPI_CHECK(flush_held(env));
  GMPI_CHECK(test_marked(env));
  GMPI_CHECK(test_moving(env));
  return reclaim_out(env);
}

/* Could a pass move anything? Sends and receives not yet released, messages moving, waiting
 * for a mark or for a link position (a receive given up leaves its message to land), envelopes
 * held or still going out (MPI may need this rank's progress to deliver one a peer waits for).
 * An idle engine needs no pass: what arrives for it waits in the channel until a receive is
 * posted (its test polls), and a peer's rendezvous send waits for exactly such a receive. So a
 * program's other comms cost a wait nothing. */
static void note_wanted(struct gmpi_envelope_engine *env) {
  int wanted = env->n_live || env->moving || env->marked || env->n_held || env->self_held ||
               env->n_awaiting_go || env->n_out;
  gmpi_progress_want(&env->wanted, wanted);
}

static void unlock(struct gmpi_envelope_engine *env) {
  note_wanted(env);
  pthread_mutex_unlock(&env->lock);
}

/* Where this thread's last pass from a test ran: the engine, the public call and the wait's
 * spin (core/progress.h's gmpi_polls). A wait tests its request (a pass), then drives every engine;
 * a waitall tests its requests one after another (a sendrecv's two among them). A second pass
 * over the same engine in the same spin finds what the first found, at the same cost -- half
 * of a small message's wait -- so a test in the same call and spin, and the drive of that
 * spin, skip it. A program's own test loop is a new call each time, and a wait's next spin a
 * new poll count: both pass again. */
typedef struct {
  const struct gmpi_envelope_engine *env;
  unsigned long call, polls;
} last_pass_t;
static _Thread_local last_pass_t last_pass GMPI_TLS_HOT;

/* Called by every wait in gmpi (core/progress.h), whatever it waits for, on any thread. */
static gmpi_status_t progress_from_elsewhere(void *ctx) {
  struct gmpi_envelope_engine *env = ctx;
  if (last_pass.env == env && last_pass.polls == gmpi_polls) return GMPI_SUCCESS; /* above */
  if (pthread_mutex_trylock(&env->lock) != 0) return GMPI_SUCCESS; /* its holder progresses */
  gmpi_status_t st = GMPI_SUCCESS;
  if (env->comm->failure == GMPI_SUCCESS) {
    st = progress(env);
    if (st != GMPI_SUCCESS) gmpi_comm_fail(env->comm, st);
  }
  unlock(env);
  return st;
}

gmpi_status_t gmpi_env_progress(struct gmpi_envelope_engine *env) {
  pthread_mutex_lock(&env->lock);
  gmpi_status_t st = progress(env);
  unlock(env);
  return st;
}

/* ---- posting ---------------------------------------------------------------------------- */

static gmpi_status_t post_recv(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  env_recv_t *er = gmpi_spare_take(&env->spare_recvs);
  if (!er) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a receive");
  er->m.source = req->args.peer;
  er->m.tag = req->args.tag;
  er->req = req;
  if (env->mover->mark) {
    gmpi_status_t st = env->mover->mark(env->mctx, req->args.buf, &er->mark);
    if (st != GMPI_SUCCESS) {
      gmpi_spare_give(&env->spare_recvs, er);
      return st;
    }
  }
  req->be = er;
  env->n_live++;
  gmpi_match_msg_t *m = gmpi_match_post(&env->match, &er->m);
  return m ? bind(env, (env_msg_t *)m, req) : GMPI_SUCCESS;
}

/* Does a self send wait in its own buffer for the receive to copy it? Large and synchronous
 * ones always; an eager-sized one when a posted receive takes it at once: that receive copies
 * from the send's buffer (one copy, device to device on a GPU) instead of from a host copy
 * taken first (two, and a pass through host memory) -- a sendrecv to self posts its receive
 * first. Only with no earlier self message still held: those match first. */
static int self_send_waits(struct gmpi_envelope_engine *env, const gmpi_p2p_args_t *a,
                           size_t bytes) {
  if (!eager_sized(bytes, a)) return 1;
  if (!bytes) return 0; /* nothing to copy: done at once, as before */
  return !env->self_held && gmpi_match_would_take(&env->match, env->comm->rank, a->tag);
}

/* Self messages: eager ones are copied at once (the send completes); larger and synchronous
 * ones, and those a posted receive takes, stay in the sender's buffer until their receive
 * copies them. */
static gmpi_status_t post_self_send(struct gmpi_envelope_engine *env, gmpi_request_t req,
                                    env_send_t *es, size_t bytes) {
  env_msg_t *msg = gmpi_spare_take(&env->spare_msgs);
  if (!msg) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a self message");
  const gmpi_p2p_args_t *a = &req->args;
  msg->m = (gmpi_match_msg_t){.source = env->comm->rank,
                              .tag = a->tag,
                              .bytes = bytes,
                              .dtype = (int)a->dtype,
                              .seq = es->seq};
  msg->proto = P_SELF;
  gmpi_status_t st = GMPI_SUCCESS;
  if (!self_send_waits(env, a, bytes)) {
    if (bytes) st = own_data(msg, bytes);
    if (st == GMPI_SUCCESS && bytes)
      st = env->mover->to_host(env->mctx, msg->data, a->buf, bytes, &msg->filling);
  } else { /* read from the sender's buffer once the program's stream passed the send */
    msg->self_send = req;
    es->self_msg = msg;
    if (env->mover->mark) st = env->mover->mark(env->mctx, a->buf, &msg->filling);
  }
  if (st != GMPI_SUCCESS) {
    free_msg(env, msg);
    return st;
  }
  if (msg->filling && !msg->self_send) { /* complete once the copy has the data */
    msg->fill_send = es;
    es->held_self = msg;
  } else if (!msg->self_send) {
    es->complete = 1;
  }
  if (env->self_held_tail)
    env->self_held_tail->next = msg;
  else
    env->self_held = msg;
  env->self_held_tail = msg;
  return GMPI_SUCCESS;
}

static gmpi_status_t post_eager(struct gmpi_envelope_engine *env, const gmpi_p2p_args_t *a,
                                env_send_t *es, size_t bytes) {
  out_msg_t *o = NULL;
  GMPI_CHECK(new_out(env, bytes, &o));
  o->w = (wire_t){.kind = a->sync ? W_EAGER_SYNC : W_EAGER,
                  .tag = a->tag,
                  .dtype = (int32_t)a->dtype,
                  .bytes = bytes,
                  .seq = es->seq};
  if (bytes) {
    gmpi_status_t st = env->mover->to_host(env->mctx, o->payload, a->buf, bytes, &o->ready);
    if (st != GMPI_SUCCESS) {
      free_out(env, o);
      return st;
    }
  }
  if (o->ready || a->sync) { /* complete once the copy has the data; synchronous: at FIN */
    o->send = es;
    es->held_out = o;
  } else {
    es->complete = 1;
  }
  if (a->sync) { /* complete at the receiver's FIN */
    es->offered = W_EAGER_SYNC;
    env_peer_t *p = &env->peers[a->peer];
    es->next = p->waiting;
    p->waiting = es;
  }
  hold(env, a->peer, o);
  return GMPI_SUCCESS;
}

static gmpi_status_t post_rendezvous(struct gmpi_envelope_engine *env, const gmpi_p2p_args_t *a,
                                     env_send_t *es, size_t bytes) {
  out_msg_t *o = NULL;
  GMPI_CHECK(new_out(env, 0, &o));
  size_t blob_len = env->mover->expose ? env->mover->expose(env->mctx, a->peer, a->buf, bytes,
                                                            o->w.blob, &o->ready)
                                       : 0;
  /* the link reads the buffer at the peer's answer: the envelope waits for the send's mark */
  if (!o->ready && env->mover->mark) {
    gmpi_status_t st = env->mover->mark(env->mctx, a->buf, &o->ready);
    if (st != GMPI_SUCCESS) {
      free_out(env, o);
      return st;
    }
  }
  o->w.kind = blob_len ? W_RTS_PULL : W_RTS_LINK;
  if (!blob_len && env->mover->host_mem && env->mover->host_mem(env->mctx, a->buf))
    o->w.kind = W_RTS_HOST; /* the receiver may take it over the channel */
  es->offered = o->w.kind;
  o->send = es; /* unanswerable until its envelope has gone out (flush_peer) */
  es->held_out = o;
  o->w.tag = a->tag;
  o->w.dtype = (int32_t)a->dtype;
  o->w.bytes = bytes;
  o->w.seq = es->seq;
  o->w.blob_len = (uint32_t)blob_len;
  env_peer_t *p = &env->peers[a->peer];
  es->next = p->waiting;
  p->waiting = es;
  hold(env, a->peer, o);
  return GMPI_SUCCESS;
}

static gmpi_status_t post_send(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  env_send_t *es = gmpi_spare_take(&env->spare_sends);
  if (!es) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a send");
  const gmpi_p2p_args_t *a = &req->args;
  size_t bytes = gmpi_p2p_bytes(a);
  es->req = req;
  es->seq = env->peers[a->peer].next_out_seq++;
  req->be = es;
  gmpi_status_t st;
  if (a->peer == env->comm->rank)
    st = post_self_send(env, req, es, bytes);
  else if (bytes <= GMPI_ENV_EAGER_BYTES) /* synchronous too: done at FIN */
    st = post_eager(env, a, es, bytes);
  else
    st = post_rendezvous(env, a, es, bytes);
  if (st != GMPI_SUCCESS) { /* no envelope carries its number: the next message takes it */
    env->peers[a->peer].next_out_seq--;
    req->be = NULL;
    gmpi_spare_give(&env->spare_sends, es);
    return st;
  }
  env->n_live++;
  /* Its envelope goes out now (unless its data is not ready yet, or one ahead of it waits).
   * Nothing else is progressed: every test and wait does that, and a post that polled the
   * channel too would cost a small message's whole time again -- but sends finished at their
   * post run no pass, so the post keeps the out list short (reclaim_out). */
  GMPI_CHECK(a->peer == env->comm->rank ? flush_self(env) : flush_peer(env, a->peer));
  return reclaim_out(env);
}

static void abandon(struct gmpi_envelope_engine *env, gmpi_request_t req);

gmpi_status_t gmpi_env_post(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  pthread_mutex_lock(&env->lock);
  gmpi_status_t st = req->args.dir == GMPI_P2P_SEND ? post_send(env, req) : post_recv(env, req);
  /* Failed after it was registered (a later step, or an earlier envelope's copy test): the
   * caller frees a request whose post failed, so the engine lets go of it here, and the comm
   * fails, as when a test fails (gmpi_env_test). */
  if (st != GMPI_SUCCESS && (req->be || req->done)) { /* done: a receive landed, its FIN failed */
    abandon(env, req);
    gmpi_comm_fail(env->comm, st);
  }
  unlock(env);
  return st;
}

/* ---- testing and abandoning ------------------------------------------------------------- */

static gmpi_status_t test_send(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done) {
  env_send_t *es = req->be;
  if (es->handle) {
    int flag = 0;
    GMPI_CHECK(env->mover->test(env->mctx, es->handle, &flag));
    if (flag) {
      es->handle = NULL;
      es->complete = 1;
    }
  }
  if (es->chan_op) {
    int flag = 0;
    GMPI_CHECK(env->oob->chan_test(&es->chan_op, &flag, NULL, NULL));
    es->complete = flag;
  }
  *done = es->complete;
  if (*done) {
    req->status = (gmpi_msg_status_t){req->args.peer, req->args.tag, req->args.count};
    req->result = GMPI_SUCCESS;
    send_released(env, es);
    req->be = NULL;
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t probe(struct gmpi_envelope_engine *env, int source, int tag, int *flag,
                           gmpi_msg_status_t *status) {
  GMPI_CHECK(progress(env));
  *flag = 0;
  for (gmpi_match_msg_t *m = env->match.unexpected_head; m; m = m->next) {
    if (!gmpi_match_accepts(source, tag, m->source, m->tag)) continue;
    *status =
        (gmpi_msg_status_t){m->source, m->tag, m->bytes / gmpi_dtype_size((gmpi_dtype_t)m->dtype)};
    *flag = 1;
    break;
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_env_probe(struct gmpi_envelope_engine *env, int source, int tag, int *flag,
                             gmpi_msg_status_t *status) {
  pthread_mutex_lock(&env->lock);
  gmpi_status_t st = probe(env, source, tag, flag, status);
  if (st != GMPI_SUCCESS) gmpi_comm_fail(env->comm, st); /* see gmpi_env_test */
  unlock(env);
  return st;
}

/* A send whose data is out of its buffer (an eager copy taken, a FIN received), or a receive
 * done already, is finished without a progress pass: that pass would cost a small blocking
 * send as much again. Progress comes with the next test of anything unfinished, or any wait. */
static int finished(gmpi_request_t req) {
  if (req->args.dir != GMPI_P2P_SEND) return req->done;
  const env_send_t *es = req->be;
  return es->complete && !es->handle && !es->chan_op;
}

static gmpi_status_t test(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done) {
  unsigned long call = gmpi_thread.call.serial;
  int passed = last_pass.env == env && last_pass.call == call && last_pass.polls == gmpi_polls;
  if (!passed && !finished(req)) {
    GMPI_CHECK(progress(env));
    last_pass = (last_pass_t){env, call, gmpi_polls};
  }
  if (req->args.dir == GMPI_P2P_SEND) return test_send(env, req, done);
  *done = req->done;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_env_test(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done) {
  pthread_mutex_lock(&env->lock);
  gmpi_status_t st = test(env, req, done);
  /* A pass that failed left the engine and its peers out of step (an envelope lost, a transfer
   * never answered): the comm fails, as when another wait's pass fails, so that no later message
   * meets what this one left behind (a data receive posted for a send now given up, whose tag
   * a message 30,000 later would reuse). */
  if (st != GMPI_SUCCESS) gmpi_comm_fail(env->comm, st);
  unlock(env);
  return st;
}

/* A send given up. What it started goes on without it: a held envelope is still sent once its
 * copy lands (its peer counts sequence numbers), and a self message still arrives. */
static void abandon_send(struct gmpi_envelope_engine *env, env_send_t *es) {
  if (es->handle) env->mover->cancel(env->mctx, es->handle);
  if (es->chan_op) env->oob->chan_cancel(es->chan_op); /* MPI may still read the buffer */
  /* its data is gone: a receive that matches it gets an error */
  if (es->self_msg) es->self_msg->self_send = NULL;
  if (es->held_out) es->held_out->send = NULL;
  if (es->held_self) es->held_self->fill_send = NULL;
  if (!es->complete && !es->handle && !es->chan_op && !es->self_msg)
    take_waiting(&env->peers[es->req->args.peer], es->seq);
  send_released(env, es);
}

/* A receive given up: its message, if one is moving into the buffer, lands and is dropped. */
static void abandon_recv(struct gmpi_envelope_engine *env, env_recv_t *er) {
  env_msg_t *msg = er->msg;
  if (er->mark) env->mover->cancel(env->mctx, er->mark); /* still posted */
  er->mark = NULL;
  if (gmpi_match_cancel(&env->match, &er->m) || !msg) return;
  msg->req = NULL;
  msg->orphan = 1;
}

static void cancel_recv(struct gmpi_envelope_engine *env, gmpi_request_t req, int *cancelled) {
  env_recv_t *er = req->be;
  *cancelled = 0;
  if (req->done || !er || req->args.dir != GMPI_P2P_RECV || er->msg) return;
  if (!gmpi_match_cancel(&env->match, &er->m)) return;
  if (er->mark) env->mover->cancel(env->mctx, er->mark);
  recv_released(env, er);
  req->be = NULL;
  *cancelled = 1;
}

gmpi_status_t gmpi_env_cancel(struct gmpi_envelope_engine *env, gmpi_request_t req,
                              int *cancelled) {
  pthread_mutex_lock(&env->lock);
  cancel_recv(env, req, cancelled);
  unlock(env);
  return GMPI_SUCCESS;
}

static void abandon(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  if (req->done || !req->be) return;
  if (req->args.dir == GMPI_P2P_SEND)
    abandon_send(env, req->be);
  else {
    abandon_recv(env, req->be);
    recv_released(env, req->be);
  }
  req->be = NULL;
}

void gmpi_env_abandon(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  pthread_mutex_lock(&env->lock);
  abandon(env, req);
  unlock(env);
}

/* ---- life cycle ------------------------------------------------------------------------- */

/* Which peers may pull from us is the mover's business; the engine only needs the ctrl
 * channel and the posted receives. */
static gmpi_status_t open_channel(struct gmpi_envelope_engine *env) {
  GMPI_CHECK(env->oob->chan_open(env->comm, &env->ctrl));
  for (int i = 0; i < N_POSTED; i++) {
    if (!(env->in_buf[i] = malloc(WIRE_MAX)))
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for envelope buffers");
  }
  for (int i = 0; i < N_POSTED; i++)
    GMPI_CHECK(post_incoming(env, i));
  return GMPI_SUCCESS;
}

/* GMPI_LINKS=eager (the default): every link the comm will need, set up as it starts -- when no
 * work of the program's can be pending on the device -- instead of at its first message, where
 * NCCL's set-up can wait for a kernel that waits for the peer (docs/design.md, "A link set up
 * while..."). The leader of each pair opens the link, one allgather carries every leader's
 * introductions, followers join, and each rank waits (GMPI_TIMEOUT) until its links are ready; a
 * vote makes the outcome every rank's. A comm no rank of which wants a link (all its peers on one
 * host, reached by CUDA IPC) pays one allgather of a count. Above EARLY_LINKS_MAX_RANKS the
 * introductions (size^2 of them), above EARLY_LINKS_MAX_PEERS the links, cost too much: links stay
 * lazy, said at info level. */
#define EARLY_LINKS_MAX_RANKS 256
/* Nor when a rank wants more links than this: each is a two-rank NCCL communicator (cuda: about
 * 262 MiB for a process's first, 12 MiB for each further one), set up whether or not the
 * program ever sends to that peer. */
#define EARLY_LINKS_MAX_PEERS 16
typedef struct {
  uint32_t present, len;
  uint8_t blob[GMPI_MOVER_BLOB_BYTES];
} intro_t;

static gmpi_status_t settle_links(struct gmpi_envelope_engine *env) {
  gmpi_comm_t comm = env->comm;
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (;;) {
    int waiting = 0;
    for (int p = 0; p < comm->size; p++) {
      int ready = 1;
      if (p != comm->rank && env->peers[p].link_ready && env->mover->link_ready)
        GMPI_CHECK(env->mover->link_ready(env->mctx, p, &ready));
      waiting += !ready;
    }
    if (!waiting) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d))
      return gmpi_error(GMPI_ERR_TIMEOUT,
                        "GMPI_LINKS=eager: %d link(s) of this rank not set up within "
                        "GMPI_TIMEOUT=%g s",
                        waiting, comm->cfg.timeout_s);
  }
}

/* The leaders' opens, one allgather of introductions (the diagonal entry says whether this
 * rank's opens failed, so that every rank stops there together), the followers' joins and a
 * vote on them, then each rank's wait for its links and a vote on that: every rank makes the
 * same collective calls whatever fails where. */
static gmpi_status_t exchange_intros(struct gmpi_envelope_engine *env, intro_t *mine,
                                     intro_t *all) {
  gmpi_comm_t comm = env->comm;
  int n = comm->size, me = comm->rank, failed = -1;
  gmpi_status_t opened = GMPI_SUCCESS;
  for (int p = me + 1; p < n; p++) {
    if (!env->mover->link_wanted(env->mctx, p)) continue;
    size_t len = 0;
    opened = env->mover->link_open(env->mctx, p, mine[p].blob, &len);
    if (opened != GMPI_SUCCESS) break;
    mine[p].present = 1;
    mine[p].len = (uint32_t)len;
    env->peers[p].link_ready = 1;
  }
  mine[me].present = opened != GMPI_SUCCESS;
  GMPI_CHECK(env->oob->allgather(comm, mine, all, (size_t)n * sizeof(*mine)));
  for (int r = 0; r < n && failed < 0; r++)
    if (all[(size_t)r * (size_t)n + (size_t)r].present) failed = r;
  if (opened != GMPI_SUCCESS) return opened;
  if (failed >= 0)
    return gmpi_error(GMPI_ERR_BACKEND,
                      "GMPI_LINKS=eager: rank %d could not open its links; its log says why",
                      failed);
  gmpi_status_t joined = GMPI_SUCCESS;
  for (int q = 0; q < me; q++) {
    const intro_t *in = &all[(size_t)q * (size_t)n + (size_t)me];
    if (!in->present) continue;
    gmpi_status_t st = in->len > GMPI_MOVER_BLOB_BYTES /* from another rank: checked before use */
                           ? gmpi_error(GMPI_ERR_INTERNAL,
                                        "link introduction from rank %d has %u bytes", q, in->len)
                           : env->mover->link_join(env->mctx, q, in->blob, in->len);
    if (st == GMPI_SUCCESS)
      env->peers[q].link_ready = 1;
    else if (joined == GMPI_SUCCESS)
      joined = st;
  }
  GMPI_CHECK(gmpi_vote(comm, joined, 0, NULL, "join its links (GMPI_LINKS=eager)"));
  return gmpi_vote(comm, settle_links(env), 0, NULL, "set up its links (GMPI_LINKS=eager)");
}

/* The most links any rank of the comm wants (one allgather of a count each): every rank gets
 * the same answer, so every rank takes the same way next. A rank whose channel did not open
 * (opened) still takes part, counting minus its status, so that every rank stops here together
 * with the same status (init's next vote is skipped on a timeout alone). */
static gmpi_status_t most_links_wanted(struct gmpi_envelope_engine *env, gmpi_status_t opened,
                                       int *most) {
  gmpi_comm_t comm = env->comm;
  int counts[EARLY_LINKS_MAX_RANKS], mine = 0, failed = -1;
  for (int p = 0; p < comm->size; p++)
    mine += p != comm->rank && env->mover->link_wanted(env->mctx, p);
  if (opened != GMPI_SUCCESS) mine = -(int)opened; /* every rank returns the same status */
  GMPI_CHECK(env->oob->allgather(comm, &mine, counts, sizeof(mine)));
  if (opened != GMPI_SUCCESS) return opened;
  *most = 0;
  for (int r = 0; r < comm->size; r++) {
    if (counts[r] < 0 && failed < 0) failed = r;
    if (counts[r] > *most) *most = counts[r];
  }
  if (failed >= 0) /* another rank's word: a status gmpi knows, else BACKEND */
    return gmpi_error(
        -counts[failed] <= GMPI_ERR_INTERNAL ? (gmpi_status_t)-counts[failed] : GMPI_ERR_BACKEND,
        "rank %d could not open its envelope engine's channel; its log says why", failed);
  return GMPI_SUCCESS;
}

/* opened: open_channel's outcome on this rank (see most_links_wanted). */
static gmpi_status_t open_links_early(struct gmpi_envelope_engine *env, gmpi_status_t opened) {
  gmpi_comm_t comm = env->comm;
  if (!comm->cfg.links_eager || !env->mover->link_wanted || comm->size < 2) return opened;
  if (comm->size > EARLY_LINKS_MAX_RANKS) {
    gmpi_log(GMPI_LOG_INFO,
             "GMPI_LINKS=eager: a comm of %d ranks (more than %d) sets its links up lazily",
             comm->size, EARLY_LINKS_MAX_RANKS);
    return opened;
  }
  int most = 0;
  GMPI_CHECK(most_links_wanted(env, opened, &most));
  if (most == 0) return GMPI_SUCCESS; /* e.g. every peer on this host, reached by CUDA IPC */
  if (most > EARLY_LINKS_MAX_PEERS) {
    gmpi_log(GMPI_LOG_INFO,
             "GMPI_LINKS=eager: a rank of this comm wants %d links (more than %d): they are set "
             "up lazily, at their first message",
             most, EARLY_LINKS_MAX_PEERS);
    return GMPI_SUCCESS;
  }
  size_t n = (size_t)comm->size;
  intro_t *mine = calloc(n, sizeof(*mine)), *all = calloc(n * n, sizeof(*all));
  gmpi_status_t st =
      mine && all ? GMPI_SUCCESS
                  : gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %zu link introductions", n * n);
  st = gmpi_vote(comm, st, 0, NULL, "find memory for link introductions (GMPI_LINKS=eager)");
  if (st == GMPI_SUCCESS) st = exchange_intros(env, mine, all);
  free(mine);
  free(all);
  if (st == GMPI_SUCCESS)
    gmpi_log(GMPI_LOG_INFO,
             "GMPI_LINKS=eager: %s engine's links set up with every peer that "
             "needs one",
             env->mover->name);
  return st;
}

gmpi_status_t gmpi_env_create(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                              struct gmpi_envelope_engine **out) {
  struct gmpi_envelope_engine *env = calloc(1, sizeof(*env));
  if (!env) {
    mover->destroy(mover_ctx);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the envelope engine");
  }
  env->comm = comm;
  env->oob = comm->oob.ops;
  env->mover = mover;
  env->mctx = mover_ctx;
  spares_init(env);
  pthread_mutex_init(&env->lock, NULL);
  gmpi_status_t st = GMPI_SUCCESS;
  env->peers = calloc((size_t)comm->size, sizeof(*env->peers));
  if (!env->peers) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d peers", comm->size);
    goto destroy_env;
  }
  /* before the engine is registered: no other thread's progress pumps its links meanwhile */
  GMPI_CHECK_GOTO(open_links_early(env, open_channel(env)), st, destroy_env);
  GMPI_CHECK_GOTO(gmpi_progress_add(progress_from_elsewhere, env, &env->wanted), st, destroy_env);
  *out = env;
  return GMPI_SUCCESS;
destroy_env:
  gmpi_env_destroy(env);
  return st;
}

static void free_msgs(env_msg_t *msg, struct gmpi_envelope_engine *env) {
  while (msg) {
    env_msg_t *next = msg->next;
    if (msg->handle) env->mover->cancel(env->mctx, msg->handle);
    if (msg->chan_op) env->oob->chan_cancel(msg->chan_op);
    if (msg->filling) env->mover->cancel(env->mctx, msg->filling);
    if (msg->mark) env->mover->cancel(env->mctx, msg->mark);
    free_msg(env, msg);
    msg = next;
  }
}

/* Envelopes never sent: their copies or exposures are cancelled first (the mover then no
 * longer writes their payload). */
static void free_held(out_msg_t *o, struct gmpi_envelope_engine *env) {
  while (o) {
    out_msg_t *next = o->next;
    if (o->ready) env->mover->cancel(env->mctx, o->ready);
    free_out(env, o);
    o = next;
  }
}

/* Envelopes still going out (a FIN to a peer that is finalizing too) get a short grace. */
static void drain_out(struct gmpi_envelope_engine *env) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, env->comm->failure == GMPI_SUCCESS ? 2.0 : 0.01);
  while (env->out && test_out(env) == GMPI_SUCCESS && env->out && !gmpi_deadline_poll(&d)) {
  }
  for (out_msg_t *o = env->out, *next; o; o = next) {
    next = o->next;
    env->oob->chan_cancel(o->op); /* the channel may still read o: it is left to the process */
  }
  if (env->out) gmpi_log(GMPI_LOG_INFO, "envelopes still unsent at close were left to the channel");
}

void gmpi_env_destroy(struct gmpi_envelope_engine *env) {
  if (!env) return;
  gmpi_progress_remove(progress_from_elsewhere, env);
  if (env->ctrl) drain_out(env);
  for (int i = 0; i < N_POSTED; i++) {
    if (env->oob->chan_cancel(env->in_op[i])) free(env->in_buf[i]); /* else left to MPI */
  }
  /* Messages nobody received wait in the unexpected queue; moving ones on their lists. */
  for (gmpi_match_msg_t *m = env->match.unexpected_head, *next; m; m = next) {
    next = m->next;
    free_msg(env, (env_msg_t *)m);
  }
  free_msgs(env->moving, env);
  free_msgs(env->marked, env);
  free_msgs(env->self_held, env);
  for (int p = 0; env->peers && p < env->comm->size; p++) {
    free_msgs(env->peers[p].awaiting_go, env);
    free_held(env->peers[p].held, env);
  }
  env->mover->destroy(env->mctx);
  env->oob->chan_close(env->ctrl, env->comm->failure != GMPI_SUCCESS);
  free(env->peers);
  gmpi_spares_drop(&env->spare_sends);
  gmpi_spares_drop(&env->spare_recvs);
  gmpi_spares_drop(&env->spare_msgs);
  gmpi_spares_drop(&env->spare_outs);
  pthread_mutex_destroy(&env->lock);
  free(env);
}

/* ---- as an engine's point-to-point half ------------------------------------------------- */

static gmpi_status_t half_post(void *state, gmpi_request_t req) {
  return gmpi_env_post(state, req);
}
static gmpi_status_t half_test(void *state, gmpi_request_t req, int *done) {
  return gmpi_env_test(state, req, done);
}
static void half_abandon(void *state, gmpi_request_t req) { gmpi_env_abandon(state, req); }
static gmpi_status_t half_cancel(void *state, gmpi_request_t req, int *cancelled) {
  return gmpi_env_cancel(state, req, cancelled);
}
static gmpi_status_t half_probe(void *state, gmpi_comm_t comm, int source, int tag, int *flag,
                                gmpi_msg_status_t *status) {
  (void)comm;
  return gmpi_env_probe(state, source, tag, flag, status);
}

const gmpi_p2p_engine_ops_t gmpi_p2p_envelope = {
    .name = "envelope",
    .post = half_post,
    .test = half_test,
    .abandon = half_abandon,
    .cancel = half_cancel,
    .probe = half_probe,
    .exchange = NULL, /* every sendrecv is two requests: a message starts with its envelope */
};

gmpi_status_t gmpi_env_engine_open(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                                   gmpi_engine_t *engine) {
  struct gmpi_envelope_engine *env = NULL;
  GMPI_CHECK(gmpi_env_create(comm, mover, mover_ctx, &env));
  engine->p2p = &gmpi_p2p_envelope;
  engine->p2p_state = env;
  return GMPI_SUCCESS;
}

void gmpi_env_engine_close(gmpi_engine_t *engine) {
  if (engine->p2p != &gmpi_p2p_envelope) return;
  gmpi_env_destroy(engine->p2p_state);
  engine->p2p = NULL;
  engine->p2p_state = NULL;
}
