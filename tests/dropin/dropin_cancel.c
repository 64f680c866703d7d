/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Cancel and matched probes through the layer (issue 30: MPICH's rcancel, cancelanysrc,
 * scancel2, issendselfcancel, mprobe; mpi4py's pickled receives use matched probes). A receive
 * no message matched is taken back (MPI_Test_cancelled true) and takes no later message; a
 * matched receive and a send complete as they would have, and MPI_Test_cancelled says so;
 * MPI_Comm_free with a send the cancel did not take back returns at once. MPI_Mprobe/Improbe
 * then MPI_Mrecv/Imrecv receive exactly the probed message, in MPI's order, of any datatype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin_util.h"

enum { BIG = 1 << 18 }; /* ints: 1 MiB, above any eager limit */

static int is_cancelled(const MPI_Status *st) {
  int flag = -1;
  D_MPI(MPI_Test_cancelled(st, &flag));
  return flag;
}

/* Three of four receives cancelled in a scrambled order; one message arrives and goes to the
 * one left (MPICH's rcancel), sizes from 1 byte to 1 MiB. Then an ANY_SOURCE receive cancelled
 * before its message is sent (cancelanysrc). Pairs (0,1), (2,3), ... */
static void cancel_receives(void) {
  int peer = d_rank() ^ 1, sizes[4] = {1, 100, 10000, 1 << 20};
  if (peer >= d_size()) {
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return;
  }
  if (d_rank() % 2 == 0) {
    char *one = host_alloc(100);
    memset(one, 'a' + d_rank(), 100);
    D_MPI(MPI_Send(one, 100, MPI_CHAR, peer, 1, MPI_COMM_WORLD));
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int msg = 42 + d_rank();
    D_MPI(MPI_Send(&msg, 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
    free(one);
    return;
  }
  char *bufs[4];
  MPI_Request q[4];
  MPI_Status st;
  for (int i = 0; i < 4; i++) {
    bufs[i] = host_alloc((size_t)sizes[i]);
    memset(bufs[i], '.', (size_t)sizes[i]);
    D_MPI(MPI_Irecv(bufs[i], sizes[i], MPI_CHAR, peer, i, MPI_COMM_WORLD, &q[i]));
  }
  int order[3] = {2, 3, 0};
  for (int k = 0; k < 3; k++) {
    int i = order[k];
    D_MPI(MPI_Cancel(&q[i]));
    D_MPI(MPI_Wait(&q[i], &st));
    D_EQ_INT(is_cancelled(&st), 1);
    D_EQ_INT(bufs[i][0], '.');
  }
  D_MPI(MPI_Wait(&q[1], &st));
  D_EQ_INT(is_cancelled(&st), 0);
  D_STATUS(&st, MPI_CHAR, peer, 1, 100);
  D_EQ_INT(bufs[1][99], 'a' + peer);
  for (int i = 0; i < 4; i++)
    free(bufs[i]);
  /* ANY_SOURCE, cancelled before the message exists; a second receive gets it */
  int msg = -1;
  MPI_Request r;
  D_MPI(MPI_Irecv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &r));
  D_MPI(MPI_Cancel(&r));
  D_MPI(MPI_Wait(&r, &st));
  D_EQ_INT(is_cancelled(&st), 1);
  D_EQ_INT(msg, -1);
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  D_MPI(MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
  D_EQ_INT(msg, 42 + peer);
}

/* A receive a message matched already cannot be cancelled: it completes with the data. A send
 * whose receive took it (MPICH's scancel2) is not cancelled either. */
static void cancel_too_late(void) {
  int peer = d_rank() ^ 1;
  if (peer >= d_size()) {
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return;
  }
  int *data = host_alloc(BIG * sizeof(int)), *got = host_alloc(BIG * sizeof(int));
  for (int i = 0; i < BIG; i++)
    data[i] = d_rank() * 1000 + i % 1000, got[i] = -1;
  MPI_Request rq, sq;
  MPI_Status st;
  D_MPI(MPI_Irecv(got, BIG, MPI_INT, peer, 3, MPI_COMM_WORLD, &rq));
  D_MPI(MPI_Isend(data, BIG, MPI_INT, peer, 3, MPI_COMM_WORLD, &sq));
  /* 1 MiB goes by rendezvous: once both sends completed (the barrier), both receives matched */
  D_MPI(MPI_Wait(&sq, &st));
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  D_MPI(MPI_Cancel(&rq));
  D_MPI(MPI_Wait(&rq, &st));
  D_EQ_INT(is_cancelled(&st), 0);
  D_STATUS(&st, MPI_INT, peer, 3, BIG);
  for (int i = 0; i < BIG; i += 997)
    D_EQ_INT(got[i], peer * 1000 + i % 1000);
  /* scancel2: a small Isend the peer receives, then cancelled: not cancelled */
  char c = (char)('A' + d_rank()), in = 0;
  D_MPI(MPI_Isend(&c, 1, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &sq));
  D_MPI(MPI_Recv(&in, 1, MPI_CHAR, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  D_MPI(MPI_Cancel(&sq));
  D_MPI(MPI_Wait(&sq, &st));
  D_EQ_INT(is_cancelled(&st), 0);
  D_EQ_INT(in, 'A' + peer);
  free(data);
  free(got);
}

/* MPICH's issendselfcancel: an Issend to oneself, probed, cancel tried, freed; a receive then
 * gets it (or, had the cancel won, the receive is cancelled itself). */
static void issend_self_cancel(void) {
  MPI_Request q;
  MPI_Status st;
  int v = 77 + d_rank(), got = -1;
  D_MPI(MPI_Issend(&v, 1, MPI_INT, 0, 123, MPI_COMM_SELF, &q));
  D_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &st));
  D_EQ_INT(st.MPI_SOURCE, 0);
  D_EQ_INT(st.MPI_TAG, 123);
  D_MPI(MPI_Cancel(&q));
  D_TRUE(q != MPI_REQUEST_NULL);
  D_MPI(MPI_Request_free(&q));
  D_MPI(MPI_Irecv(&got, 1, MPI_INT, 0, 123, MPI_COMM_SELF, &q));
  D_MPI(MPI_Cancel(&q));
  D_MPI(MPI_Wait(&q, &st));
  if (!is_cancelled(&st)) D_EQ_INT(got, 77 + d_rank());
}

/* A send to a rank that never receives it: the cancel may fail, and the dup it was sent on is
 * freed anyway, at once (MPI_Comm_free does not wait for pending operations). The peer then
 * drains it on MPI_COMM_WORLD's side? No: it was the dup's; the peer receives it before its own
 * free, after ours, so the send completes during the next collective. */
static void free_with_pending_send(void) {
  int peer = d_rank() ^ 1;
  MPI_Comm dup;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  if (peer < d_size() && d_rank() % 2 == 0) {
    int v = 5;
    MPI_Request q;
    MPI_Status st;
    D_MPI(MPI_Issend(&v, 1, MPI_INT, peer, 9, dup, &q));
    D_MPI(MPI_Cancel(&q));
    D_MPI(MPI_Test(&q, &(int){0}, &st)); /* not complete: nobody received it */
    D_MPI(MPI_Request_free(&q));
  }
  D_MPI(MPI_Comm_free(&dup));
  D_TRUE(dup == MPI_COMM_NULL);
  /* the world comm still works */
  int one = 1, sum = 0;
  D_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  D_EQ_INT(sum, d_size());
}

/* ---- matched probes ------------------------------------------------------------------------ */

/* Every rank sends three messages to its next (tags 1, 2, 1; one of them 1 MiB); the receiver
 * takes tag 2 first by Mprobe, then the two tag-1 messages in order by Improbe (polled) and
 * ANY_TAG Mprobe, with Mrecv and Imrecv. Then a derived-type Mrecv and a truncated Mrecv. */
static void matched_probes(void) {
  int *big = host_alloc(BIG * sizeof(int)), *got = host_alloc(BIG * sizeof(int));
  for (int i = 0; i < BIG; i++)
    big[i] = d_rank() + i;
  int small1 = 100 + d_rank(), small2 = 200 + d_rank();
  MPI_Request q[3];
  D_MPI(MPI_Isend(&small1, 1, MPI_INT, d_next(), 1, MPI_COMM_WORLD, &q[0]));
  D_MPI(MPI_Isend(&small2, 1, MPI_INT, d_next(), 2, MPI_COMM_WORLD, &q[1]));
  D_MPI(MPI_Isend(big, BIG, MPI_INT, d_next(), 1, MPI_COMM_WORLD, &q[2]));
  MPI_Message m;
  MPI_Status st;
  int v = -1, count = -1;
  st.MPI_ERROR = MPI_ERR_DIMS; /* single-completion calls leave MPI_ERROR alone (MPICH's mprobe) */
  D_MPI(MPI_Mprobe(d_prev(), 2, MPI_COMM_WORLD, &m, &st));
  D_STATUS(&st, MPI_INT, d_prev(), 2, 1);
  D_EQ_INT(st.MPI_ERROR, MPI_ERR_DIMS);
  D_MPI(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
  D_EQ_INT(st.MPI_ERROR, MPI_ERR_DIMS);
  D_TRUE(m == MPI_MESSAGE_NULL);
  D_EQ_INT(v, 200 + d_prev());
  D_STATUS(&st, MPI_INT, d_prev(), 2, 1);
  int flag = 0;
  double start = MPI_Wtime();
  while (!flag && !d_poll_expired(start))
    D_MPI(MPI_Improbe(MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &flag, &m, &st));
  D_TRUE(flag);
  D_MPI(MPI_Get_count(&st, MPI_INT, &count));
  D_EQ_INT(count, 1); /* the first tag-1 message is the small one */
  MPI_Request r;
  D_MPI(MPI_Imrecv(&v, 1, MPI_INT, &m, &r));
  D_MPI(MPI_Wait(&r, &st));
  D_EQ_INT(v, 100 + d_prev());
  D_STATUS(&st, MPI_INT, d_prev(), 1, 1);
  D_MPI(MPI_Mprobe(d_prev(), MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st));
  D_STATUS(&st, MPI_INT, d_prev(), 1, BIG);
  D_MPI(MPI_Mrecv(got, BIG, MPI_INT, &m, &st));
  for (int i = 0; i < BIG; i += 1001)
    D_EQ_INT(got[i], d_prev() + i);
  D_MPI(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
  /* a derived type: 6 ints sent, received as 3 strided pairs */
  int six[6], grid[9];
  for (int i = 0; i < 6; i++)
    six[i] = 10 * d_rank() + i;
  for (int i = 0; i < 9; i++)
    grid[i] = -1;
  MPI_Datatype pairs;
  D_MPI(MPI_Type_vector(3, 2, 3, MPI_INT, &pairs));
  D_MPI(MPI_Type_commit(&pairs));
  D_MPI(MPI_Isend(six, 6, MPI_INT, d_next(), 8, MPI_COMM_WORLD, &q[0]));
  D_MPI(MPI_Mprobe(d_prev(), 8, MPI_COMM_WORLD, &m, &st));
  D_MPI(MPI_Mrecv(grid, 1, pairs, &m, &st));
  int want[9] = {0, 1, -1, 2, 3, -1, 4, 5, -1};
  for (int i = 0; i < 9; i++)
    if (want[i] >= 0) want[i] += 10 * d_prev();
  d_check_int("mrecv of a vector", grid, want, 9);
  D_MPI(MPI_Type_free(&pairs));
  D_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
  /* truncated: 6 ints into room for 2 */
  D_MPI(MPI_Isend(six, 6, MPI_INT, d_next(), 9, MPI_COMM_WORLD, &q[0]));
  D_MPI(MPI_Mprobe(d_prev(), 9, MPI_COMM_WORLD, &m, &st));
  int two[2] = {-1, -1};
  int rc = MPI_Mrecv(two, 2, MPI_INT, &m, &st);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  D_EQ_INT(cls, MPI_ERR_TRUNCATE);
  D_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
  /* MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, an empty receive */
  D_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
  D_TRUE(m == MPI_MESSAGE_NO_PROC);
  D_MPI(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
  D_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
  free(big);
  free(got);
}

/* Each error of a matched receive reaches the comm's error handler once, as MPI's does: a
 * receive with a type never committed, and a truncation (the layer gave the first twice). */
static int handled;
static void count_errors(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  (void)code;
  handled++;
}

static void matched_receive_errors(void) {
  MPI_Comm c;
  MPI_Errhandler counter;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  D_MPI(MPI_Comm_create_errhandler(count_errors, &counter));
  D_MPI(MPI_Comm_set_errhandler(c, counter));
  int six[6] = {1, 2, 3, 4, 5, 6}, got[6], cls = -1;
  MPI_Datatype uncommitted;
  D_MPI(MPI_Type_contiguous(6, MPI_INT, &uncommitted));
  MPI_Request q;
  MPI_Message m;
  MPI_Status st;
  D_MPI(MPI_Isend(six, 6, MPI_INT, d_next(), 3, c, &q));
  D_MPI(MPI_Mprobe(d_prev(), 3, c, &m, &st));
  handled = 0;
  MPI_Error_class(MPI_Mrecv(got, 1, uncommitted, &m, &st), &cls);
  D_EQ_INT(cls, MPI_ERR_TYPE);
  D_EQ_INT(handled, 1);
  D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
  D_MPI(MPI_Isend(six, 6, MPI_INT, d_next(), 4, c, &q));
  D_MPI(MPI_Mprobe(d_prev(), 4, c, &m, &st));
  handled = 0;
  MPI_Error_class(MPI_Mrecv(got, 2, MPI_INT, &m, &st), &cls);
  D_EQ_INT(cls, MPI_ERR_TRUNCATE);
  D_EQ_INT(handled, 1);
  D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
  D_MPI(MPI_Type_free(&uncommitted));
  D_MPI(MPI_Errhandler_free(&counter));
  D_MPI(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_cancel", D_SCOPE_P2P);
  matched_receive_errors();
  cancel_receives();
  cancel_too_late();
  issend_self_cancel();
  matched_probes();
  free_with_pending_send();
  return d_finish();
}
