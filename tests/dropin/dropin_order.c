/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI's order between messages that take different ways through the layer. Under
 * GMPI_INTERPOSE=all a nonblocking message of a predefined type to or from another rank is
 * MPI's own request on gmpi's communicator, while a blocking call, a derived type, an
 * ANY_SOURCE receive and a message to oneself go through gmpi: messages of one sender with one
 * tag must still be received in the order sent, by receives in the order posted, whichever way
 * each took. Each rank sends a sequence to the next rank, its kinds in turn, and receives the
 * previous rank's with receives of every kind in turn -- all posted before the messages
 * arrive, then all after -- and checks which message each receive got and its status. */
#include "dropin_util.h"

enum { N_MSGS = 12, INTS = 4, TAG = 5 };

/* The k-th message's values from rank src. */
static void payload(int src, int k, int *out) {
  for (int i = 0; i < INTS; i++)
    out[i] = 1000 * src + 10 * k + i;
}

/* Every other int of a 2*INTS array: a derived type, packed by the layer. */
static MPI_Datatype strided(void) {
  MPI_Datatype t;
  D_MPI(MPI_Type_vector(INTS, 1, 2, MPI_INT, &t));
  D_MPI(MPI_Type_commit(&t));
  return t;
}

/* The k-th send, of the kind k picks; *q is MPI_REQUEST_NULL after a blocking one. */
static void send_kth(int k, void *buf, MPI_Datatype vec, MPI_Request *q) {
  int host[2 * INTS] = {0};
  int vals[INTS];
  payload(d_rank(), k, vals);
  *q = MPI_REQUEST_NULL;
  switch (k % 4) {
  case 0: /* nonblocking, predefined type: MPI's own request under the layer */
    mem_put(buf, vals, sizeof(vals));
    D_MPI(MPI_Isend(buf, INTS, MPI_INT, d_next(), TAG, MPI_COMM_WORLD, q));
    break;
  case 1: /* blocking: gmpi's call */
    mem_put(buf, vals, sizeof(vals));
    D_MPI(MPI_Send(buf, INTS, MPI_INT, d_next(), TAG, MPI_COMM_WORLD));
    break;
  case 2: /* derived type: packed, through gmpi */
    for (int i = 0; i < INTS; i++)
      host[2 * i] = vals[i];
    mem_put(buf, host, sizeof(host));
    D_MPI(MPI_Isend(buf, 1, vec, d_next(), TAG, MPI_COMM_WORLD, q));
    break;
  default: /* synchronous, nonblocking */
    mem_put(buf, vals, sizeof(vals));
    D_MPI(MPI_Issend(buf, INTS, MPI_INT, d_next(), TAG, MPI_COMM_WORLD, q));
  }
}

/* The k-th receive, of the kind k picks (a blocking one, into *st, only when posted late). */
static void recv_kth(int k, int late, void *buf, MPI_Datatype vec, MPI_Request *q, MPI_Status *st) {
  *q = MPI_REQUEST_NULL;
  switch (k % 5) {
  case 0: /* nonblocking from the sender: MPI's own request under the layer */
    D_MPI(MPI_Irecv(buf, INTS, MPI_INT, d_prev(), TAG, MPI_COMM_WORLD, q));
    break;
  case 1: /* ANY_SOURCE: gmpi's (a message to oneself could match it) */
    D_MPI(MPI_Irecv(buf, INTS, MPI_INT, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, q));
    break;
  case 2: /* derived type: through gmpi, unpacked */
    D_MPI(MPI_Irecv(buf, 1, vec, d_prev(), TAG, MPI_COMM_WORLD, q));
    break;
  case 3: /* ANY_TAG from the sender: MPI's own */
    D_MPI(MPI_Irecv(buf, INTS, MPI_INT, d_prev(), MPI_ANY_TAG, MPI_COMM_WORLD, q));
    break;
  default:
    if (late)
      D_MPI(MPI_Recv(buf, INTS, MPI_INT, d_prev(), TAG, MPI_COMM_WORLD, st));
    else
      D_MPI(MPI_Irecv(buf, INTS, MPI_INT, d_prev(), TAG, MPI_COMM_WORLD, q));
  }
}

static void check_kth(int k, const void *buf, const MPI_Status *st, MPI_Datatype vec,
                      const char *when) {
  int host[2 * INTS], got[INTS], want[INTS];
  mem_get(host, buf, sizeof(host));
  for (int i = 0; i < INTS; i++)
    got[i] = k % 5 == 2 ? host[2 * i] : host[i];
  payload(d_prev(), k, want);
  d_check_int(d_label("%s: receive %d", when, k), got, want, INTS);
  if (k % 5 == 2)
    D_STATUS(st, vec, d_prev(), TAG, 1);
  else
    D_STATUS(st, MPI_INT, d_prev(), TAG, INTS);
}

/* All receives posted before any message is sent (preposted), or after all are sent. */
static void run(int preposted, MPI_Datatype vec) {
  const char *when = preposted ? "preposted" : "unexpected";
  void *sbuf[N_MSGS], *rbuf[N_MSGS];
  MPI_Request sq[N_MSGS], rq[N_MSGS];
  MPI_Status rst[N_MSGS];
  for (int k = 0; k < N_MSGS; k++) {
    sbuf[k] = mem_alloc_p2p(2 * INTS * sizeof(int));
    rbuf[k] = mem_alloc_p2p(2 * INTS * sizeof(int));
    mem_set(rbuf[k], 0xff, 2 * INTS * sizeof(int));
  }
  if (preposted) {
    for (int k = 0; k < N_MSGS; k++)
      recv_kth(k, 0, rbuf[k], vec, &rq[k], &rst[k]);
    D_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every receive is posted before the first send */
  }
  for (int k = 0; k < N_MSGS; k++)
    send_kth(k, sbuf[k], vec, &sq[k]);
  if (!preposted) {
    D_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the eager messages are in before the receives */
    for (int k = 0; k < N_MSGS; k++)
      recv_kth(k, 1, rbuf[k], vec, &rq[k], &rst[k]);
  }
  MPI_Status wst[N_MSGS];
  D_MPI(MPI_Waitall(N_MSGS, rq, wst));
  for (int k = 0; k < N_MSGS; k++) /* a blocking receive's status is its own */
    check_kth(k, rbuf[k], !preposted && k % 5 == 4 ? &rst[k] : &wst[k], vec, when);
  D_MPI(MPI_Waitall(N_MSGS, sq, MPI_STATUSES_IGNORE));
  for (int k = 0; k < N_MSGS; k++) {
    mem_free(sbuf[k]);
    mem_free(rbuf[k]);
  }
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_order", D_SCOPE_P2P);
  MPI_Datatype vec = strided();
  run(1, vec);
  run(0, vec);
  D_MPI(MPI_Type_free(&vec));
  return d_finish();
}
