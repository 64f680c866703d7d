/* SPDX-License-Identifier: BSD-3-Clause */
/* A message longer than its receive buffer, through each receive call: MPI_ERR_TRUNCATE,
 * and the status still names the message that overflowed (its source and tag), as MPI's does
 * -- programs (MPICH's errors/pt2pt errinstat* among them) read which receive failed from it.
 * MPI_Waitall and MPI_Testall say MPI_ERR_IN_STATUS, with MPI_ERR_TRUNCATE in the truncated
 * receive's status and MPI_SUCCESS in the other's. The count of a truncated receive is not
 * checked (MPI leaves it to the implementation), nor what its buffer holds. The comm works
 * afterwards: a message sent next arrives whole. Each rank receives from the previous one;
 * errors return (MPI_ERRORS_RETURN, set by d_init). */
#include "dropin_util.h"

enum { LONG = 8, SHORT = 4 };

static int error_class(int rc) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

/* LONG ints with tag to the next rank, from a buffer of this test's memory kind. */
static void send_long(int tag, MPI_Request *r) {
  int v[LONG];
  for (int i = 0; i < LONG; i++)
    v[i] = 100 * d_rank() + i;
  void *buf = mem_dup_p2p(v, sizeof(v));
  D_MPI(MPI_Isend(buf, LONG, MPI_INT, d_next(), tag, MPI_COMM_WORLD, r));
  D_MPI(MPI_Wait(r, MPI_STATUS_IGNORE));
  mem_free(buf);
}

/* The next message from the previous rank arrives whole: nothing of the failed receive is left
 * (no receive posted, no message half taken). */
static void still_works(int tag) {
  MPI_Request r;
  int *in = mem_alloc_p2p(LONG * sizeof(int)), got[LONG], want[LONG];
  D_MPI(MPI_Irecv(in, LONG, MPI_INT, d_prev(), tag, MPI_COMM_WORLD, &r));
  send_long(tag, &(MPI_Request){MPI_REQUEST_NULL});
  MPI_Status st;
  D_MPI(MPI_Wait(&r, &st));
  D_STATUS(&st, MPI_INT, d_prev(), tag, LONG);
  mem_get(got, in, sizeof(got));
  for (int i = 0; i < LONG; i++)
    want[i] = 100 * d_prev() + i;
  d_check_int(d_label("after the truncation, tag %d", tag), got, want, LONG);
  mem_free(in);
}

static void blocking_receive(void) {
  MPI_Request s;
  int *in = mem_alloc_p2p(SHORT * sizeof(int)), *out = mem_dup_p2p((int[LONG]){0}, LONG * 4);
  MPI_Status st = {.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_MPI(MPI_Isend(out, LONG, MPI_INT, d_next(), 5, MPI_COMM_WORLD, &s));
  D_EQ_INT(
      error_class(MPI_Recv(in, SHORT, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st)),
      MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 5);
  D_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
  mem_free(in);
  mem_free(out);
  still_works(6);
}

static void sendrecv(void) {
  int *in = mem_alloc_p2p(SHORT * sizeof(int)), *out = mem_alloc_p2p(LONG * sizeof(int));
  MPI_Status st = {.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_EQ_INT(error_class(MPI_Sendrecv(out, LONG, MPI_INT, d_next(), 7, in, SHORT, MPI_INT, d_prev(),
                                    MPI_ANY_TAG, MPI_COMM_WORLD, &st)),
           MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 7);
  mem_free(in);
  mem_free(out);
  still_works(8);
}

static void wait_one(void) {
  MPI_Request r;
  int *in = mem_alloc_p2p(SHORT * sizeof(int));
  MPI_Status st = {.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_MPI(MPI_Irecv(in, SHORT, MPI_INT, d_prev(), MPI_ANY_TAG, MPI_COMM_WORLD, &r));
  send_long(9, &(MPI_Request){MPI_REQUEST_NULL});
  D_EQ_INT(error_class(MPI_Wait(&r, &st)), MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 9);
  D_TRUE(r == MPI_REQUEST_NULL);
  mem_free(in);
  still_works(10);
}

/* Two receives completed together, the second truncated (MPICH's errinstatwa and -ta): which
 * one failed is read from the statuses. test: MPI_Testall polled (bounded) instead. */
static void complete_two(int test) {
  MPI_Request r[2];
  MPI_Status st[2] = {{.MPI_SOURCE = -7, .MPI_TAG = -7, .MPI_ERROR = -1},
                      {.MPI_SOURCE = -7, .MPI_TAG = -7, .MPI_ERROR = -1}};
  int *fits = mem_alloc_p2p(LONG * sizeof(int)), *small = mem_alloc_p2p(SHORT * sizeof(int));
  D_MPI(MPI_Irecv(fits, LONG, MPI_INT, d_prev(), 11, MPI_COMM_WORLD, &r[0]));
  D_MPI(MPI_Irecv(small, SHORT, MPI_INT, d_prev(), 12, MPI_COMM_WORLD, &r[1]));
  send_long(11, &(MPI_Request){MPI_REQUEST_NULL});
  send_long(12, &(MPI_Request){MPI_REQUEST_NULL});
  int rc = MPI_SUCCESS, done = 0;
  if (!test) rc = MPI_Waitall(2, r, st);
  for (double start = MPI_Wtime(); test && !done && !d_poll_expired(start);)
    rc = MPI_Testall(2, r, &done, st);
  D_EQ_INT(error_class(rc), MPI_ERR_IN_STATUS);
  D_EQ_INT(st[0].MPI_ERROR, MPI_SUCCESS);
  D_STATUS(&st[0], MPI_INT, d_prev(), 11, LONG);
  D_EQ_INT(error_class(st[1].MPI_ERROR), MPI_ERR_TRUNCATE);
  D_EQ_INT(st[1].MPI_SOURCE, d_prev());
  D_EQ_INT(st[1].MPI_TAG, 12);
  mem_free(fits);
  mem_free(small);
  still_works(13);
}

/* MPI_Waitany, a persistent receive (MPI_Recv_init, MPI_Start, MPI_Wait), MPI_Sendrecv_replace
 * and a matched receive (MPI_Mprobe, MPI_Mrecv), each truncated. */
static void other_receives(void) {
  MPI_Request r;
  MPI_Status st = {.MPI_SOURCE = -7, .MPI_TAG = -7};
  int *in = mem_alloc_p2p(SHORT * sizeof(int)), index = -1;
  D_MPI(MPI_Irecv(in, SHORT, MPI_INT, MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &r));
  send_long(16, &(MPI_Request){MPI_REQUEST_NULL});
  D_EQ_INT(error_class(MPI_Waitany(1, &r, &index, &st)), MPI_ERR_TRUNCATE);
  D_EQ_INT(index, 0);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 16);
  D_MPI(MPI_Recv_init(in, SHORT, MPI_INT, d_prev(), 17, MPI_COMM_WORLD, &r));
  D_MPI(MPI_Start(&r));
  send_long(17, &(MPI_Request){MPI_REQUEST_NULL});
  st = (MPI_Status){.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_EQ_INT(error_class(MPI_Wait(&r, &st)), MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 17);
  if (r != MPI_REQUEST_NULL) D_MPI(MPI_Request_free(&r)); /* Open MPI frees it on the error */
  /* replace: LONG ints out, room for SHORT back (the count is the buffer's for both) */
  int *both = mem_dup_p2p((int[LONG]){0}, LONG * sizeof(int));
  MPI_Request big;
  D_MPI(MPI_Isend(both, LONG, MPI_INT, d_next(), 18, MPI_COMM_WORLD, &big));
  int *small = mem_alloc_p2p(SHORT * sizeof(int));
  st = (MPI_Status){.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_EQ_INT(error_class(MPI_Sendrecv_replace(small, SHORT, MPI_INT, d_next(), 19, d_prev(), 18,
                                            MPI_COMM_WORLD, &st)),
           MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 18);
  D_MPI(MPI_Wait(&big, MPI_STATUS_IGNORE));
  D_MPI(MPI_Recv(in, SHORT, MPI_INT, d_prev(), 19, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  MPI_Message m;
  send_long(20, &(MPI_Request){MPI_REQUEST_NULL});
  D_MPI(MPI_Mprobe(d_prev(), 20, MPI_COMM_WORLD, &m, &st));
  st = (MPI_Status){.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_EQ_INT(error_class(MPI_Mrecv(in, SHORT, MPI_INT, &m, &st)), MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 20);
  mem_free(in);
  mem_free(both);
  mem_free(small);
  still_works(21);
}

/* A derived receive type too small for the message (two ints, strided). */
static void derived_type(void) {
  MPI_Datatype pairs;
  D_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &pairs));
  D_MPI(MPI_Type_commit(&pairs));
  MPI_Request s;
  int *in = mem_alloc_p2p(SHORT * sizeof(int)), *out = mem_dup_p2p((int[LONG]){0}, LONG * 4);
  MPI_Status st = {.MPI_SOURCE = -7, .MPI_TAG = -7};
  D_MPI(MPI_Isend(out, LONG, MPI_INT, d_next(), 14, MPI_COMM_WORLD, &s));
  D_EQ_INT(error_class(MPI_Recv(in, 1, pairs, d_prev(), 14, MPI_COMM_WORLD, &st)),
           MPI_ERR_TRUNCATE);
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 14);
  D_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
  D_MPI(MPI_Type_free(&pairs));
  mem_free(in);
  mem_free(out);
  still_works(15);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_truncate", D_SCOPE_P2P);
  blocking_receive();
  sendrecv();
  wait_one();
  complete_two(0);
  complete_two(1);
  derived_type();
  other_receives();
  return d_finish();
}
