/* SPDX-License-Identifier: BSD-3-Clause */
/* GMPI_TIMEOUT (1 s here): a rank that does not take part makes the others return
 * GMPI_ERR_TIMEOUT, well before the test's own limit; the comm then answers GMPI_ERR_STATE
 * and finalizes cleanly; a new comm works. Scenarios: a collective that only rank 0 calls,
 * blocking and nonblocking; a
 * receive nobody sends to (on device buffers when the backend is cuda), waited by gmpi_waitall
 * and by gmpi_waitany; a wait after one member of a waitall timed out; a sendrecv whose
 * receive nobody sends to; a blocking receive and a synchronous send with another rank that
 * nobody matches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static int rank, size;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The failed comm refuses work with STATE and still finalizes. Calls that touch only this
 * process's memory still work on it (the drop-in classifies and stages through
 * MPI_COMM_WORLD's twin for every comm, healthy ones too). */
static void failed_then_finalized(gmpi_comm_t *c) {
  T_STATUS(gmpi_barrier(*c), GMPI_ERR_STATE);
  T_ERROR_MENTIONS("failed earlier");
  int from = 42, to = 0, device = -1;
  T_OK(gmpi_mem_copy(*c, &to, &from, sizeof(int)));
  T_EQ_INT(to, 42);
  T_OK(gmpi_mem_is_device(*c, &to, &device));
  T_EQ_INT(device, 0);
  size_t library = 0, user = 0;
  T_OK(gmpi_comm_mem_usage(*c, &library, &user));
  T_OK(gmpi_mem_free(*c, NULL));
  T_OK(gmpi_finalize(c));
  T_EQ_PTR(*c, NULL);
}

/* Bounded: the call gave up no later than the timeout plus a second of slack. */
static void bounded(double started, double timeout) {
  double took = now() - started;
  if (took > timeout + 1.0) T_FAIL_("gave up after %.2f s, GMPI_TIMEOUT is %.1f s", took, timeout);
}

static void skipped_collective(double timeout) {
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  float *x = t_alloc(1024 * sizeof(float));
  if (rank == 0) {
    double t0 = now();
    T_STATUS(gmpi_allreduce(x, x, 1024, GMPI_FLOAT32, GMPI_SUM, c), GMPI_ERR_TIMEOUT);
    T_ERROR_MENTIONS("GMPI_TIMEOUT");
    bounded(t0, timeout);
    failed_then_finalized(&c);
  } else {
    T_OK(gmpi_finalize(&c)); /* the others never call the allreduce */
  }
  t_free(x);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The collective above through its nonblocking form, waited: the error names the call as the user
 * made it, and the flight record printed at the timeout (GMPI_DEBUG=info, the _info variant) names
 * it from a static string -- it once kept a name built on the starting call's stack. */
static void skipped_nonblocking_collective(double timeout) {
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  float *x = t_alloc(1024 * sizeof(float));
  const char *debug = getenv("GMPI_DEBUG");
  int record = debug && !strcmp(debug, "info"); /* the record is printed: read it back */
  if (rank == 0) {
    gmpi_request_t req = NULL;
    T_OK(gmpi_iallreduce(x, x, 1024, GMPI_FLOAT32, GMPI_SUM, c, &req));
    FILE *log = record ? tmpfile() : NULL;
    int saved = log ? dup(STDERR_FILENO) : -1;
    if (log) fflush(stderr), dup2(fileno(log), STDERR_FILENO);
    double t0 = now();
    gmpi_status_t st = gmpi_wait(&req, NULL);
    if (log) fflush(stderr), dup2(saved, STDERR_FILENO), close(saved); /* failures show again */
    T_STATUS(st, GMPI_ERR_TIMEOUT);
    T_ERROR_MENTIONS("iallreduce");
    bounded(t0, timeout);
    if (log) {
      char text[8192] = "";
      rewind(log);
      text[fread(text, 1, sizeof(text) - 1, log)] = '\0';
      fclose(log);
      if (!strstr(text, "iallreduce      count 1024"))
        T_FAIL_("the flight record does not name the iallreduce; it printed:\n%s", text);
    }
    failed_then_finalized(&c);
  } else {
    T_OK(gmpi_finalize(&c));
  }
  t_free(x);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Two receives nobody sends to, waited by gmpi_waitall (any = 0) or gmpi_waitany (any = 1):
 * either gives every request up at the deadline, none left live, no index named. */
static void unmatched_receive(double timeout, int any) {
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  int *buf = t_alloc(4096 * sizeof(int));
  gmpi_request_t reqs[2] = {NULL, NULL};
  double t0 = now();
  /* from ourselves, a tag nobody sends: every rank waits on its own */
  T_OK(gmpi_irecv(buf, 4096, GMPI_INT32, rank, 99, c, &reqs[0]));
  T_OK(gmpi_irecv(buf, 1, GMPI_INT32, GMPI_ANY_SOURCE, 98, c, &reqs[1]));
  int index = -7;
  if (any)
    T_STATUS(gmpi_waitany(2, reqs, &index, NULL), GMPI_ERR_TIMEOUT);
  else
    T_STATUS(gmpi_waitall(2, reqs, NULL), GMPI_ERR_TIMEOUT);
  T_ERROR_MENTIONS("GMPI_TIMEOUT");
  bounded(t0, timeout);
  T_EQ_INT(index, any ? GMPI_UNDEFINED : -7);
  T_EQ_PTR(reqs[0], NULL);
  T_EQ_PTR(reqs[1], NULL);
  failed_then_finalized(&c);
  t_free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A sendrecv whose receive nobody sends to: GMPI_ERR_TIMEOUT naming the call, bounded. */
static void unmatched_sendrecv(double timeout) {
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int *out = t_alloc(256 * sizeof(int)), *in = t_alloc(256 * sizeof(int));
  gmpi_msg_status_t st = {-5, -5, 99};
  double t0 = now();
  T_STATUS(gmpi_sendrecv(out, 256, GMPI_INT32, next, 97, in, 256, GMPI_INT32, prev, 96, c, &st),
           GMPI_ERR_TIMEOUT);
  T_ERROR_MENTIONS("GMPI_TIMEOUT");
  bounded(t0, timeout);
  T_EQ_INT(st.source, -5);
  failed_then_finalized(&c);
  t_free(out);
  t_free(in);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Blocking calls with another rank (no request inside, docs/design.md): an eager send nobody
 * receives still completes at once; a receive nobody sends to, and a synchronous send nobody
 * receives, give GMPI_ERR_TIMEOUT naming the call, bounded, and fail their comm. */
static void unmatched_blocking(double timeout) {
  int next = (rank + 1) % size;
  int out[4] = {1, 2, 3, 4}, in[4] = {0};
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  T_OK(gmpi_send(out, 4, GMPI_INT32, next, 93, c)); /* eager: done though never received */
  gmpi_msg_status_t st = {-5, -5, 99};
  double t0 = now();
  T_STATUS(gmpi_recv(in, 4, GMPI_INT32, next, 95, c, &st), GMPI_ERR_TIMEOUT);
  T_ERROR_MENTIONS("irecv from rank");
  T_ERROR_MENTIONS("GMPI_TIMEOUT");
  bounded(t0, timeout);
  T_EQ_INT(st.source, -5);
  T_EQ_INT(in[0], 0);
  failed_then_finalized(&c);
  MPI_Barrier(MPI_COMM_WORLD);
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  t0 = now();
  T_STATUS(gmpi_ssend(out, 4, GMPI_INT32, next, 94, c), GMPI_ERR_TIMEOUT);
  T_ERROR_MENTIONS("isend to rank");
  bounded(t0, timeout);
  failed_then_finalized(&c);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  const char *v = getenv("GMPI_TIMEOUT");
  double timeout = v ? atof(v) : 300;
  if (timeout <= 0 || timeout > 10)
    return t_skip("timeouts", "set GMPI_TIMEOUT to a few seconds (ctest sets 1)");
  if (size > 1) skipped_collective(timeout);
  if (size > 1) skipped_nonblocking_collective(timeout);
  unmatched_receive(timeout, 0);
  unmatched_receive(timeout, 1);
  unmatched_sendrecv(timeout);
  if (size > 1) unmatched_blocking(timeout);
  /* The comm made before all this is untouched. */
  int one = 1, sum = 0;
  T_OK(gmpi_allreduce(&one, &sum, 1, GMPI_INT32, GMPI_SUM, comm));
  T_EQ_INT(sum, size);
  return t_finish("timeouts");
}
