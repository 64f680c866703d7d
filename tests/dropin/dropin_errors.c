/* SPDX-License-Identifier: BSD-3-Clause */
/* Error classes of wrong arguments, as a plain MPI program: what Open MPI returns for a bad
 * rank, root, tag or buffer (MPI_ERR_RANK, _ROOT, _TAG, _BUFFER) the layer returns too, not
 * MPI_ERR_ARG for all of them; a datatype never committed is MPI_ERR_TYPE wherever it is
 * used (the layer lays such types out itself: it moved them, or crashed in MPI_Pack_size).
 * Errors return (MPI_ERRORS_RETURN); every rank checks each. */
#include <mpi.h>
#include <stdio.h>

static int rank, size, failures;

static void expect_class(const char *what, int rc, int want) {
  int got = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &got);
  if (got == want) return;
  failures++;
  fprintf(stderr, "[rank %d] FAIL %s: error class %d, expected %d\n", rank, what, got, want);
}

/* A sendrecv refused for its send half received nothing and left no receive behind: the next
 * message to this rank with its source and tag goes to the next receive (polled for 10 s, so a
 * receive left behind fails the check instead of waiting for GMPI_TIMEOUT). */
static void no_receive_left(int value) {
  int in = -1, out = value + 5, done = 0;
  MPI_Request r[2];
  MPI_Isend(&out, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(&in, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, &r[1]);
  for (double start = MPI_Wtime(); !done && MPI_Wtime() - start < 10;)
    MPI_Testall(2, r, &done, MPI_STATUSES_IGNORE);
  if (done && in == value + 5) return;
  failures++;
  fprintf(stderr, "[rank %d] FAIL a refused sendrecv left its receive posted: got %d, not %d\n",
          rank, in, value + 5);
}

/* The rest of the calls that name a rank, root, tag or buffer: each half of a sendrecv, the
 * nonblocking and probing calls, the rooted collectives. (Open MPI does not check a
 * collective's NULL buffer: it crashes, so those cases are gmpi's alone, in test_badinput.) */
static void wrong_arguments(void) {
  int buf[4] = {0}, out[4 * 64] = {0}, flag = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Status st;
  expect_class(
      "sendrecv to rank size",
      MPI_Sendrecv(buf, 1, MPI_INT, size, 0, out, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, &st),
      MPI_ERR_RANK);
  expect_class("sendrecv from rank -7",
               MPI_Sendrecv(buf, 1, MPI_INT, rank, 0, out, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &st),
               MPI_ERR_RANK);
  expect_class(
      "sendrecv with sendtag -2",
      MPI_Sendrecv(buf, 1, MPI_INT, rank, -2, out, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, &st),
      MPI_ERR_TAG);
  expect_class(
      "sendrecv with recvtag -3",
      MPI_Sendrecv(buf, 1, MPI_INT, rank, 0, out, 1, MPI_INT, rank, -3, MPI_COMM_WORLD, &st),
      MPI_ERR_TAG);
  no_receive_left(buf[0]);
  expect_class("isend to rank size", MPI_Isend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r),
               MPI_ERR_RANK);
  expect_class("irecv with tag -4", MPI_Irecv(buf, 1, MPI_INT, rank, -4, MPI_COMM_WORLD, &r),
               MPI_ERR_TAG);
  expect_class("irecv into NULL", MPI_Irecv(NULL, 2, MPI_INT, rank, 0, MPI_COMM_WORLD, &r),
               MPI_ERR_BUFFER);
  expect_class("iprobe of rank size + 1", MPI_Iprobe(size + 1, 0, MPI_COMM_WORLD, &flag, &st),
               MPI_ERR_RANK);
  expect_class("iprobe with tag -6", MPI_Iprobe(rank, -6, MPI_COMM_WORLD, &flag, &st), MPI_ERR_TAG);
  expect_class("reduce to root -1", MPI_Reduce(buf, out, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD),
               MPI_ERR_ROOT);
  expect_class("gather to root size",
               MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
  expect_class("scatter from root size + 2",
               MPI_Scatter(buf, 1, MPI_INT, out, 1, MPI_INT, size + 2, MPI_COMM_WORLD),
               MPI_ERR_ROOT);
  expect_class("bcast of -1 ints", MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
  expect_class("alltoall of -2 ints",
               MPI_Alltoall(buf, -2, MPI_INT, out, -2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
  expect_class("ibcast from root size", MPI_Ibcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD, &r),
               MPI_ERR_ROOT);
}

/* Two ints moved by type t from rank to itself and to every rank (bcast, allgather): each
 * call's error class. */
static void use_type(const char *name, MPI_Datatype t, int want) {
  int a[2] = {rank + 1, rank + 2}, b[2] = {-1, -1}, all[2 * 64];
  char what[96];
  MPI_Request r = MPI_REQUEST_NULL;
  snprintf(what, sizeof(what), "sendrecv of %s", name);
  expect_class(what,
               MPI_Sendrecv(a, 1, t, rank, 9, b, 1, t, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
               want);
  if (want == MPI_SUCCESS && (b[0] != rank + 1 || b[1] != rank + 2)) {
    failures++;
    fprintf(stderr, "[rank %d] FAIL %s: received %d %d\n", rank, what, b[0], b[1]);
  }
  snprintf(what, sizeof(what), "isend of %s", name);
  int rc = MPI_Isend(a, 1, t, rank, 10, MPI_COMM_WORLD, &r);
  expect_class(what, rc, want);
  if (rc == MPI_SUCCESS) {
    MPI_Recv(b, 2, MPI_INT, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  snprintf(what, sizeof(what), "bcast of %s", name);
  expect_class(what, MPI_Bcast(a, 1, t, 0, MPI_COMM_WORLD), want);
  if (want == MPI_SUCCESS && (a[0] != 1 || a[1] != 2)) { /* rank 0's pair */
    failures++;
    fprintf(stderr, "[rank %d] FAIL %s: received %d %d, want 1 2\n", rank, what, a[0], a[1]);
  }
  a[0] = rank + 1, a[1] = rank + 2;
  snprintf(what, sizeof(what), "allgather of %s", name);
  if (size > 64) return;
  expect_class(what, MPI_Allgather(a, 1, t, all, 1, t, MPI_COMM_WORLD), want);
  for (int i = 0; want == MPI_SUCCESS && i < size; i++) {
    if (all[2 * i] == i + 1 && all[2 * i + 1] == i + 2) continue;
    failures++;
    fprintf(stderr, "[rank %d] FAIL %s: block %d is %d %d, want %d %d\n", rank, what, i, all[2 * i],
            all[2 * i + 1], i + 1, i + 2);
  }
}

static void uncommitted_types(void) {
  MPI_Datatype pair, dup_pair, strided;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_vector(2, 1, 1, MPI_INT, &strided); /* two ints back to back, made as a vector */
  MPI_Type_dup(pair, &dup_pair);               /* a copy of an uncommitted type is one too */
  use_type("an uncommitted contiguous type", pair, MPI_ERR_TYPE);
  use_type("an uncommitted vector", strided, MPI_ERR_TYPE);
  use_type("a duplicate of an uncommitted type", dup_pair, MPI_ERR_TYPE);
  MPI_Type_commit(&pair);
  MPI_Type_commit(&strided);
  use_type("a committed contiguous type", pair, MPI_SUCCESS);
  use_type("a committed vector", strided, MPI_SUCCESS);
  MPI_Datatype copy;
  MPI_Type_dup(pair, &copy); /* a copy of a committed type is committed */
  use_type("a duplicate of a committed type", copy, MPI_SUCCESS);
  MPI_Type_free(&copy);
  MPI_Type_free(&dup_pair);
  MPI_Type_free(&strided);
  MPI_Type_free(&pair);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int buf[4] = {0};
  expect_class("send to rank size + 5", MPI_Send(buf, 4, MPI_INT, size + 5, 0, MPI_COMM_WORLD),
               MPI_ERR_RANK);
  expect_class("send with tag -5", MPI_Send(buf, 4, MPI_INT, rank, -5, MPI_COMM_WORLD),
               MPI_ERR_TAG);
  expect_class("receive from rank size + 3",
               MPI_Recv(buf, 4, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
               MPI_ERR_RANK);
  expect_class("send of 4 ints from NULL", MPI_Send(NULL, 4, MPI_INT, rank, 0, MPI_COMM_WORLD),
               MPI_ERR_BUFFER);
  expect_class("bcast from root size", MPI_Bcast(buf, 4, MPI_INT, size, MPI_COMM_WORLD),
               MPI_ERR_ROOT);
  wrong_arguments();
  uncommitted_types();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("dropin_errors: %s (%d failed checks)\n", total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
