#include "envelope.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/error.h"
#include "../core/log.h"
#include "../core/match.h"
#include "../core/request.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"

#define ENV_TAG 7 /* the only tag on the envelope channel */

/* What travels on the envelope channel. The first envelope to a peer may carry the mover's
 * introduction (a lane's NCCL unique id). */
typedef struct {
  int32_t tag;
  int32_t dtype;
  uint64_t bytes;
  uint64_t seq;
  uint32_t hello_len;
  uint8_t hello[GMPI_MOVER_HELLO_BYTES];
} wire_env_t;

typedef enum {
  MSG_ON_WIRE = 0, /* data not yet taken: waits its turn on the lane */
  MSG_MOVING,      /* a mover receive is in flight (to the user's buffer or to staging) */
  MSG_STAGED,      /* data sits in staging, waiting for its receive */
  MSG_IN_SENDER    /* self message: data still in the sender's buffer */
} msg_state_t;

typedef struct env_msg {
  gmpi_match_msg_t m; /* first: the matcher's view */
  msg_state_t state;
  void *staging;            /* owned staging buffer, or NULL */
  void *handle;             /* mover handle while MSG_MOVING */
  int into_user;            /* the move in flight writes the user's buffer */
  int orphan;               /* its receive was abandoned: discard the data */
  int dropped;              /* self message whose sender was abandoned: no data */
  gmpi_request_t req;       /* the receive it is matched to, or NULL */
  gmpi_request_t self_send; /* self message whose data is in this send's buffer */
  struct env_msg *lane_next;
  struct env_msg *moving_next;
} env_msg_t;

typedef struct {
  gmpi_match_recv_t m; /* first: the matcher's view */
  env_msg_t *msg;      /* matched message, or NULL while posted */
  gmpi_request_t req;  /* the request this receive belongs to */
} env_recv_t;

typedef struct {
  wire_env_t wire;
  MPI_Request env_req; /* MPI_REQUEST_NULL once the envelope is out */
  void *handle;        /* mover send, NULL once done */
  env_msg_t *self_msg; /* self message record while it is undelivered */
} env_send_t;

typedef struct {
  env_msg_t *head, *tail; /* messages from this source not yet issued, in sequence order */
  uint64_t next_in_seq;   /* sequence expected next from this source */
  uint64_t next_out_seq;  /* sequence of our next send to this peer */
} env_lane_t;

struct gmpi_envelope_engine {
  gmpi_comm_t comm;
  MPI_Comm ctrl;
  const gmpi_mover_t *mover;
  void *mctx;
  int owns_mctx; /* the MPI mover's context is the engine's */
  gmpi_match_t match;
  env_lane_t *lanes; /* one per rank */
  wire_env_t incoming;
  MPI_Request incoming_req;
  env_msg_t *moving; /* messages with a mover receive in flight */
};

/* ---- completion ------------------------------------------------------------------------- */

static void complete_recv(gmpi_request_t req, const env_msg_t *msg, gmpi_status_t result) {
  env_recv_t *er = req->be;
  free(er);
  req->be = NULL;
  req->status = (gmpi_msg_status_t){msg->m.source, msg->m.tag,
                                    msg->m.bytes / gmpi_dtype_size(req->args.dtype)};
  req->result = result;
  req->done = 1;
}

static void free_msg(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  if (msg->staging) env->mover->release(env->mctx, msg->staging, msg->m.bytes);
  free(msg);
}

/* Can the message land directly in its receive's buffer? */
static int fits(const struct gmpi_envelope_engine *env, const env_msg_t *msg, gmpi_request_t req) {
  size_t es = gmpi_dtype_size(req->args.dtype);
  return msg->m.bytes <= req->args.count * es && msg->m.bytes % es == 0 &&
         (!env->comm->cfg.check || msg->m.dtype == (int)req->args.dtype);
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

/* The send whose self message was delivered or staged is done. */
static void complete_self_send(gmpi_request_t send) {
  env_send_t *es = send->be;
  es->self_msg = NULL;
}

/* Deliver a message whose data is local (staged, or in a self-sender's buffer). */
static gmpi_status_t deliver_local(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  gmpi_request_t req = msg->req;
  gmpi_status_t result = judge(env, msg, req);
  if (msg->dropped)
    result = gmpi_error(GMPI_ERR_STATE,
                        "irecv from rank %d tag %d: the matching send was "
                        "abandoned after a failure",
                        msg->m.source, msg->m.tag);
  int in_sender = msg->state == MSG_IN_SENDER;
  const void *src = in_sender ? msg->self_send->args.buf : msg->staging;
  if (result == GMPI_SUCCESS && msg->m.bytes && src)
    result = (in_sender ? env->mover->self_copy : env->mover->copy)(env->mctx, req->args.buf, src,
                                                                    msg->m.bytes);
  if (msg->self_send) complete_self_send(msg->self_send);
  complete_recv(req, msg, result);
  free_msg(env, msg);
  return GMPI_SUCCESS;
}

/* A message met its receive (at arrival, at post, or when staged data was waiting). */
static gmpi_status_t bind(struct gmpi_envelope_engine *env, env_msg_t *msg, gmpi_request_t req) {
  msg->req = req;
  ((env_recv_t *)req->be)->msg = msg;
  if (msg->state == MSG_STAGED || msg->state == MSG_IN_SENDER) return deliver_local(env, msg);
  return GMPI_SUCCESS; /* on the wire or moving: progress finishes it */
}

/* ---- the lanes: taking data off the wire in the sender's order ------------------------- */

static int lane_has_matched(const env_lane_t *lane) {
  for (const env_msg_t *m = lane->head; m; m = m->lane_next)
    if (m->req) return 1;
  return 0;
}

/* Start the mover receive of the lane's head message. */
static gmpi_status_t take_off_wire(struct gmpi_envelope_engine *env, env_lane_t *lane) {
  env_msg_t *msg = lane->head;
  int source = msg->m.source;
  void *dst = NULL;
  msg->into_user = msg->req && fits(env, msg, msg->req);
  if (msg->into_user) {
    dst = msg->req->args.buf;
  } else if (msg->m.bytes) {
    GMPI_CHECK(env->mover->alloc(env->mctx, msg->m.bytes, &msg->staging));
    dst = msg->staging;
  }
  lane->head = msg->lane_next;
  if (!lane->head) lane->tail = NULL;
  msg->state = MSG_MOVING;
  msg->moving_next = env->moving;
  env->moving = msg;
  if (msg->m.bytes == 0) return GMPI_SUCCESS; /* nothing travels; handle stays NULL */
  return env->mover->recv(env->mctx, source, dst, msg->m.bytes, &msg->handle);
}

static gmpi_status_t issue_lanes(struct gmpi_envelope_engine *env) {
  for (int s = 0; s < env->comm->size; s++) {
    env_lane_t *lane = &env->lanes[s];
    while (lane->head) {
      env_msg_t *h = lane->head;
      int takeable = h->req || h->m.bytes <= GMPI_ENV_EAGER_BYTES || lane_has_matched(lane);
      if (!takeable) break;
      GMPI_CHECK(take_off_wire(env, lane));
    }
  }
  return GMPI_SUCCESS;
}

/* A mover receive finished: deliver, or keep the data staged for a later receive. */
static gmpi_status_t landed(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  if (!msg->req) {
    if (msg->orphan) { /* its receive was abandoned */
      free_msg(env, msg);
      return GMPI_SUCCESS;
    }
    msg->state = MSG_STAGED; /* still in the unexpected queue */
    return GMPI_SUCCESS;
  }
  if (msg->into_user) {
    complete_recv(msg->req, msg, GMPI_SUCCESS);
    free_msg(env, msg);
    return GMPI_SUCCESS;
  }
  msg->state = MSG_STAGED;
  return deliver_local(env, msg);
}

static gmpi_status_t test_moving(struct gmpi_envelope_engine *env) {
  env_msg_t **link = &env->moving;
  while (*link) {
    env_msg_t *msg = *link;
    int done = 1;
    if (msg->handle) GMPI_CHECK(env->mover->test(env->mctx, msg->handle, &done));
    if (!done) {
      link = &msg->moving_next;
      continue;
    }
    msg->handle = NULL;
    *link = msg->moving_next;
    GMPI_CHECK(landed(env, msg));
  }
  return GMPI_SUCCESS;
}

/* ---- envelopes -------------------------------------------------------------------------- */

static gmpi_status_t post_incoming(struct gmpi_envelope_engine *env) {
  GMPI_MPI_CHECK(MPI_Irecv(&env->incoming, (int)sizeof(env->incoming), MPI_BYTE, MPI_ANY_SOURCE,
                           ENV_TAG, env->ctrl, &env->incoming_req));
  return GMPI_SUCCESS;
}

/* A message is known (envelope arrived, or a self send): queue it and try to match it. */
static gmpi_status_t arrive(struct gmpi_envelope_engine *env, env_msg_t *msg) {
  gmpi_match_recv_t *r = gmpi_match_arrive(&env->match, &msg->m);
  if (!r) return GMPI_SUCCESS;
  return bind(env, msg, ((env_recv_t *)r)->req); /* env_recv_t starts with its match record */
}

static gmpi_status_t wire_arrived(struct gmpi_envelope_engine *env, int source) {
  env_lane_t *lane = &env->lanes[source];
  if (env->incoming.seq != lane->next_in_seq)
    return gmpi_error(GMPI_ERR_INTERNAL, "envelope from rank %d has sequence %llu, expected %llu",
                      source, (unsigned long long)env->incoming.seq,
                      (unsigned long long)lane->next_in_seq);
  lane->next_in_seq++;
  if (env->incoming.hello_len && env->mover->welcome)
    GMPI_CHECK(
        env->mover->welcome(env->mctx, source, env->incoming.hello, env->incoming.hello_len));
  env_msg_t *msg = calloc(1, sizeof(*msg));
  if (!msg) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an envelope");
  msg->m = (gmpi_match_msg_t){.source = source,
                              .tag = env->incoming.tag,
                              .bytes = env->incoming.bytes,
                              .dtype = env->incoming.dtype,
                              .seq = env->incoming.seq};
  msg->state = MSG_ON_WIRE;
  if (lane->tail)
    lane->tail->lane_next = msg;
  else
    lane->head = msg;
  lane->tail = msg;
  GMPI_TRACE("envelope from %d: tag %d, %zu bytes, seq %llu", source, msg->m.tag, msg->m.bytes,
             (unsigned long long)msg->m.seq);
  return arrive(env, msg);
}

static gmpi_status_t poll_envelopes(struct gmpi_envelope_engine *env) {
  for (;;) {
    int flag = 0;
    MPI_Status s;
    GMPI_MPI_CHECK(MPI_Test(&env->incoming_req, &flag, &s));
    if (!flag) return GMPI_SUCCESS;
    GMPI_CHECK(wire_arrived(env, s.MPI_SOURCE));
    GMPI_CHECK(post_incoming(env));
  }
}

static gmpi_status_t progress(struct gmpi_envelope_engine *env) {
  GMPI_CHECK(poll_envelopes(env));
  if (env->mover->progress) GMPI_CHECK(env->mover->progress(env->mctx));
  GMPI_CHECK(issue_lanes(env));
  return test_moving(env);
}

/* ---- requests --------------------------------------------------------------------------- */

static gmpi_status_t post_recv(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  env_recv_t *er = calloc(1, sizeof(*er));
  if (!er) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a receive");
  er->m.source = req->args.peer;
  er->m.tag = req->args.tag;
  er->req = req;
  req->be = er;
  gmpi_match_msg_t *m = gmpi_match_post(&env->match, &er->m);
  if (m) GMPI_CHECK(bind(env, (env_msg_t *)m, req));
  return progress(env);
}

static gmpi_status_t post_self_send(struct gmpi_envelope_engine *env, gmpi_request_t req,
                                    env_send_t *es) {
  env_msg_t *msg = calloc(1, sizeof(*msg));
  if (!msg) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a self message");
  env_lane_t *lane = &env->lanes[env->comm->rank];
  msg->m = (gmpi_match_msg_t){.source = env->comm->rank,
                              .tag = es->wire.tag,
                              .bytes = es->wire.bytes,
                              .dtype = es->wire.dtype,
                              .seq = lane->next_out_seq++};
  msg->state = MSG_IN_SENDER;
  msg->self_send = req;
  es->self_msg = msg;
  return arrive(env, msg);
}

static gmpi_status_t post_send(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  env_send_t *es = calloc(1, sizeof(*es));
  if (!es) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a send");
  const gmpi_p2p_args_t *a = &req->args;
  es->env_req = MPI_REQUEST_NULL;
  es->wire = (wire_env_t){
      .tag = a->tag, .dtype = (int32_t)a->dtype, .bytes = a->count * gmpi_dtype_size(a->dtype)};
  req->be = es;
  if (a->peer == env->comm->rank) return post_self_send(env, req, es);
  es->wire.seq = env->lanes[a->peer].next_out_seq++;
  if (es->wire.seq == 0 && env->mover->hello)
    es->wire.hello_len = (uint32_t)env->mover->hello(env->mctx, a->peer, es->wire.hello);
  GMPI_MPI_CHECK(MPI_Isend(&es->wire, (int)sizeof(es->wire), MPI_BYTE, a->peer, ENV_TAG, env->ctrl,
                           &es->env_req));
  if (es->wire.bytes)
    GMPI_CHECK(env->mover->send(env->mctx, a->peer, a->buf, es->wire.bytes, &es->handle));
  return progress(env);
}

gmpi_status_t gmpi_env_progress(struct gmpi_envelope_engine *env) { return progress(env); }

gmpi_status_t gmpi_env_post(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  return req->args.dir == GMPI_P2P_SEND ? post_send(env, req) : post_recv(env, req);
}

/* A self send waited before its receive exists: buffer it, as MPI's eager protocol would. */
static gmpi_status_t stage_self_send(struct gmpi_envelope_engine *env, env_send_t *es) {
  env_msg_t *msg = es->self_msg;
  if (msg->m.bytes) {
    GMPI_CHECK(env->mover->alloc(env->mctx, msg->m.bytes, &msg->staging));
    GMPI_CHECK(env->mover->copy(env->mctx, msg->staging, msg->self_send->args.buf, msg->m.bytes));
  }
  msg->state = MSG_STAGED;
  msg->self_send = NULL;
  es->self_msg = NULL;
  return GMPI_SUCCESS;
}

static gmpi_status_t test_send(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done) {
  env_send_t *es = req->be;
  if (es->self_msg) GMPI_CHECK(stage_self_send(env, es));
  if (es->env_req != MPI_REQUEST_NULL) {
    int flag = 0;
    GMPI_MPI_CHECK(MPI_Test(&es->env_req, &flag, MPI_STATUS_IGNORE));
  }
  if (es->handle) {
    int flag = 0;
    GMPI_CHECK(env->mover->test(env->mctx, es->handle, &flag));
    if (flag) es->handle = NULL;
  }
  *done = es->env_req == MPI_REQUEST_NULL && !es->handle;
  if (*done) {
    req->status = (gmpi_msg_status_t){req->args.peer, req->args.tag, req->args.count};
    req->result = GMPI_SUCCESS;
    free(es);
    req->be = NULL;
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_env_test(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done) {
  GMPI_CHECK(progress(env));
  if (req->args.dir == GMPI_P2P_SEND) return test_send(env, req, done);
  *done = req->done;
  return GMPI_SUCCESS;
}

void gmpi_env_abandon(struct gmpi_envelope_engine *env, gmpi_request_t req) {
  if (req->done || !req->be) return;
  if (req->args.dir == GMPI_P2P_SEND) {
    env_send_t *es = req->be;
    if (es->handle) env->mover->cancel(env->mctx, es->handle);
    if (es->self_msg) { /* its data is gone: a receive that matches it gets an error */
      es->self_msg->self_send = NULL;
      es->self_msg->dropped = 1;
      es->self_msg->state = MSG_STAGED;
    }
    if (es->env_req != MPI_REQUEST_NULL)
      MPI_Request_free(&es->env_req); /* MPI may still read */
    else
      free(es); /* es->wire: keep it */
  } else {
    env_recv_t *er = req->be;
    if (!gmpi_match_cancel(&env->match, &er->m) && er->msg) {
      er->msg->req = NULL;
      er->msg->orphan = 1;
    }
    free(er);
  }
  req->be = NULL;
}

/* ---- life cycle ------------------------------------------------------------------------- */

gmpi_status_t gmpi_env_create(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                              struct gmpi_envelope_engine **out) {
  struct gmpi_envelope_engine *env = calloc(1, sizeof(*env));
  if (!env) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the envelope engine");
  gmpi_status_t st = GMPI_SUCCESS;
  env->comm = comm;
  env->mover = mover;
  env->mctx = mover_ctx;
  env->lanes = calloc((size_t)comm->size, sizeof(*env->lanes));
  if (!env->lanes) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d lanes", comm->size);
    goto free_env;
  }
  GMPI_MPI_CHECK_GOTO(MPI_Comm_dup(gmpi_oob_mpi_comm(comm), &env->ctrl), st, free_lanes);
  GMPI_MPI_CHECK_GOTO(MPI_Comm_set_errhandler(env->ctrl, MPI_ERRORS_RETURN), st, free_ctrl);
  GMPI_CHECK_GOTO(post_incoming(env), st, free_ctrl);
  *out = env;
  return GMPI_SUCCESS;
free_ctrl:
  MPI_Comm_free(&env->ctrl);
free_lanes:
  free(env->lanes);
free_env:
  free(env);
  return st;
}

void gmpi_env_own_mover_ctx(struct gmpi_envelope_engine *env) { env->owns_mctx = 1; }

static void free_list(struct gmpi_envelope_engine *env, env_msg_t *msg, int lane_links) {
  while (msg) {
    env_msg_t *next = lane_links ? msg->lane_next : msg->moving_next;
    if (msg->handle) env->mover->cancel(env->mctx, msg->handle);
    free_msg(env, msg);
    msg = next;
  }
}

void gmpi_env_destroy(struct gmpi_envelope_engine *env) {
  if (!env) return;
  MPI_Cancel(&env->incoming_req);
  MPI_Request_free(&env->incoming_req);
  /* Staged messages nobody received are in the unexpected queue and not on a lane. */
  for (gmpi_match_msg_t *m = env->match.unexpected_head, *next; m; m = next) {
    next = m->next;
    env_msg_t *msg = (env_msg_t *)m;
    if (msg->state == MSG_STAGED || msg->state == MSG_IN_SENDER) free_msg(env, msg);
  }
  for (int s = 0; s < env->comm->size; s++)
    free_list(env, env->lanes[s].head, 1);
  free_list(env, env->moving, 0);
  if (env->comm->failure == GMPI_SUCCESS) MPI_Comm_free(&env->ctrl);
  if (env->owns_mctx) free(env->mctx);
  free(env->lanes);
  free(env);
}
