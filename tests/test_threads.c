/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_THREAD_MULTIPLE: concurrent calls on different comms are safe (include/gmpi.h, "Threads").
 * THREADS threads, each on its own duplicate of the world comm, at once: rings of nonblocking
 * eager and rendezvous messages with changing tags, ANY_SOURCE receives, probes and
 * allreduces -- every received value checked on every rank. Every wait of one thread drives
 * the other threads' engines too (GMPI_P2P=envelope), which is what used to race. Run under
 * -fsanitize=thread in CI (.ci/run). */
#include <pthread.h>
#include <stdatomic.h>
#ifdef GMPI_TEST_CUDART
#include <cuda_runtime.h>
#endif

#include "test_util.h"

#define THREADS 2
#define ITERS   2000  /* default; argv[1] gives another (compute-sanitizer runs fewer) */
#define SMALL   100   /* ints: eager */
#define LARGE   12000 /* ints: 48 KB, rendezvous */

static int rank, size, iters = ITERS;
static atomic_int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      atomic_fetch_add(&failures, 1);                                                              \
      fprintf(stderr, "[rank %d] FAIL %s:%d: ", rank, __FILE__, __LINE__);                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    gmpi_status_t s_ = (call);                                                                     \
    CHECK(s_ == GMPI_SUCCESS, "%s returned %s: %s", #call, gmpi_status_name(s_),                   \
          gmpi_last_error());                                                                      \
  } while (0)

typedef struct {
  int id;
  gmpi_comm_t comm;
  int *send, *recv; /* gmpi_mem_alloc'd: device memory on cuda */
  int *host;
} worker_t;

static int value(int from, int id, int it, int i) {
  return from * 1000003 + id * 7919 + it * 31 + i;
}

static void put(worker_t *w, int *dev, const int *host, int n) {
  CHECK_OK(gmpi_mem_copy(w->comm, dev, host, (size_t)n * sizeof(int)));
}

static void get(worker_t *w, int *host, const int *dev, int n) {
  CHECK_OK(gmpi_mem_copy(w->comm, host, dev, (size_t)n * sizeof(int)));
}

/* One ring step: receive from the left (by rank, or ANY_SOURCE), send to the right. */
static void ring(worker_t *w, int it) {
  int n = it % 2 ? LARGE : SMALL, tag = it % 7, left = (rank + size - 1) % size;
  int right = (rank + 1) % size, any = it % 5 == 0;
  for (int i = 0; i < n; i++)
    w->host[i] = value(rank, w->id, it, i);
  put(w, w->send, w->host, n);
  gmpi_request_t r[2];
  CHECK_OK(gmpi_irecv(w->recv, n, GMPI_INT32, any ? GMPI_ANY_SOURCE : left, tag, w->comm, &r[0]));
  CHECK_OK(gmpi_isend(w->send, n, GMPI_INT32, right, tag, w->comm, &r[1]));
  gmpi_msg_status_t st[2];
  CHECK_OK(gmpi_waitall(2, r, st));
  CHECK(st[0].source == left, "thread %d it %d: source %d, expected %d", w->id, it, st[0].source,
        left);
  CHECK(st[0].count == (size_t)n, "thread %d it %d: count %zu, expected %d", w->id, it, st[0].count,
        n);
  get(w, w->host, w->recv, n);
  for (int i = 0; i < n; i++)
    if (w->host[i] != value(left, w->id, it, i)) {
      CHECK(0, "thread %d it %d: element %d = %d, expected %d", w->id, it, i, w->host[i],
            value(left, w->id, it, i));
      break;
    }
}

/* A probe of a message sent to self, then its receive. */
static void probe_self(worker_t *w, int it) {
  int x = value(rank, w->id, it, 0), y = 0, flag = 0;
  gmpi_request_t r;
  CHECK_OK(gmpi_isend(&x, 1, GMPI_INT32, rank, 100, w->comm, &r));
  gmpi_msg_status_t st;
  CHECK_OK(gmpi_probe(rank, 100, w->comm, &st));
  flag = st.source == rank && st.count == 1;
  CHECK(flag, "thread %d it %d: probe found source %d count %zu", w->id, it, st.source, st.count);
  CHECK_OK(gmpi_recv(&y, 1, GMPI_INT32, rank, 100, w->comm, NULL));
  CHECK_OK(gmpi_wait(&r, NULL));
  CHECK(y == x, "thread %d it %d: self message %d, expected %d", w->id, it, y, x);
}

static void sum_ranks(worker_t *w, int it) {
  w->host[0] = rank + it;
  put(w, w->send, w->host, 1);
  CHECK_OK(gmpi_allreduce(w->send, w->recv, 1, GMPI_INT32, GMPI_SUM, w->comm));
  get(w, w->host, w->recv, 1);
  int expect = size * (size - 1) / 2 + size * it;
  CHECK(w->host[0] == expect, "thread %d it %d: allreduce %d, expected %d", w->id, it, w->host[0],
        expect);
}

static void *work(void *arg) {
  worker_t *w = arg;
#ifdef GMPI_TEST_CUDART
  int dev = -1; /* a new thread starts on device 0: the rank's device first (gmpi.h, Threads) */
  if (gmpi_comm_device(w->comm, &dev) == GMPI_SUCCESS && dev >= 0) cudaSetDevice(dev);
#endif
  for (int it = 0; it < iters; it++) {
    ring(w, it);
    if (it % 10 == 3) probe_self(w, it);
    if (it % 10 == 7) sum_ranks(w, it);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  t_rank_ = rank;
  if (argc > 1 && (iters = atoi(argv[1])) <= 0) iters = ITERS;
  if (provided < MPI_THREAD_MULTIPLE) return t_skip("test_threads", "MPI lacks THREAD_MULTIPLE");
  if (gmpi_init(MPI_COMM_WORLD, &t_comm_) != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] gmpi_init: %s\n", rank, gmpi_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  worker_t w[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    w[t] = (worker_t){.id = t};
    T_OK(gmpi_comm_dup(t_comm_, &w[t].comm));
    w[t].send = t_alloc(LARGE * sizeof(int));
    w[t].recv = t_alloc(LARGE * sizeof(int));
    w[t].host = t_host(LARGE * sizeof(int));
  }
  for (int t = 0; t < THREADS; t++)
    T_EQ_INT(pthread_create(&th[t], NULL, work, &w[t]), 0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    t_free(w[t].send);
    t_free(w[t].recv);
    free(w[t].host);
    T_OK(gmpi_comm_free(&w[t].comm));
  }
  t_failures += atomic_load(&failures);
  return t_finish("test_threads");
}
