/* SPDX-License-Identifier: BSD-3-Clause */
/* What only the cuda backend has: device binding, the raw NCCL handle (an ncclAllReduce by
 * hand on gmpi's communicator), the memory budget, host and device buffers on one comm,
 * another GPU's memory refused, stream-ordered mode. Skips, saying why, without a GPU. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>

#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

static int expected_device(void) {
  MPI_Comm node;
  int local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  const char *v = getenv("GMPI_VISIBLE_DEVICES");
  if (!v) return local;
  for (int i = 0; i < local && v; i++) {
    v = strchr(v, ',');
    if (v) v++;
  }
  return v ? atoi(v) : -1;
}

static void binding(void) {
  int dev = -1, current = -2;
  T_OK(gmpi_comm_device(comm, &dev));
  T_EQ_INT(dev, expected_device());
  cudaGetDevice(&current);
  T_EQ_INT(current, dev);
}

/* The raw handles work: an ncclAllReduce by hand on gmpi's communicator and stream. */
static void interop(void) {
  ncclComm_t nc = NULL;
  cudaStream_t s = NULL;
  T_OK(gmpi_comm_nccl(comm, (void **)&nc));
  T_OK(gmpi_comm_stream(comm, (void **)&s));
  T_TRUE(nc != NULL);
  int nranks = 0;
  ncclCommCount(nc, &nranks);
  T_EQ_INT(nranks, size);
  int *d = t_alloc(4 * sizeof(int)), h[4] = {rank + 1, 2, 3, rank}, got[4];
  t_put(d, h, sizeof(h));
  ncclResult_t r = ncclAllReduce(d, d, 4, ncclInt32, ncclSum, nc, s);
  T_TRUE(r == ncclSuccess || r == ncclInProgress);
  /* gmpi's communicator is nonblocking: the call may still be enqueuing after it returns. */
  while (r == ncclInProgress)
    if (ncclCommGetAsyncError(nc, &r) != ncclSuccess) break;
  T_EQ_INT(r, ncclSuccess);
  T_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
  t_get(got, d, sizeof(got));
  T_EQ_INT(got[0], size * (size + 1) / 2);
  T_EQ_INT(got[1], 2 * size);
  T_EQ_INT(got[3], size * (size - 1) / 2);
  t_free(d);
}

static void budget(void) {
  size_t lib0, user0, lib1, user1;
  T_OK(gmpi_comm_mem_usage(comm, &lib0, &user0));
  void *p = NULL, *q = (void *)1;
  T_OK(gmpi_mem_alloc(comm, 1 << 20, &p));
  T_OK(gmpi_comm_mem_usage(comm, &lib1, &user1));
  T_EQ_SIZE(user1, user0 + (1 << 20));
  T_STATUS(gmpi_mem_alloc(comm, SIZE_MAX / 4, &q), GMPI_ERR_NO_MEMORY);
  T_ERROR_MENTIONS("budget");
  T_EQ_PTR(q, (void *)1); /* untouched on failure */
  T_OK(gmpi_mem_free(comm, p));
  T_OK(gmpi_comm_mem_usage(comm, &lib1, &user1));
  T_EQ_SIZE(user1, user0);
  char host[8];
  T_STATUS(gmpi_mem_free(comm, host), GMPI_ERR_INVALID_ARG);
  if (rank == 0) printf("memory: library %zu bytes (gmpi + NCCL), user %zu bytes\n", lib1, user1);
}

/* gmpi_mem_is_device on every kind of memory a program passes: the host kinds whether or not
 * the process's layout vouches for them (stack, small and large malloc, static data, pinned
 * host memory) and device memory (cudaMalloc, managed memory, counted as device). */
static int is_device(const void *p) {
  int dev = -1;
  T_OK(gmpi_mem_is_device(comm, p, &dev));
  return dev;
}

static double static_buffer[4];

static void kinds(void) {
  double stack[4] = {0};
  void *small = malloc(64), *large = malloc(16 << 20), *pinned = NULL, *managed = NULL;
  T_EQ_INT(is_device(stack), 0);
  T_EQ_INT(is_device(small), 0);
  T_EQ_INT(is_device(large), 0);
  T_EQ_INT(is_device(static_buffer), 0);
  T_EQ_INT(cudaMallocHost(&pinned, 4096), cudaSuccess);
  T_EQ_INT(is_device(pinned), 0);
  void *d = t_alloc(4096);
  T_EQ_INT(is_device(d), 1);
  T_EQ_INT(is_device((char *)d + 4000), 1);
  T_EQ_INT(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
  T_EQ_INT(is_device(managed), 1);
  cudaFree(managed);
  t_free(d);
  cudaFreeHost(pinned);
  free(small);
  free(large);
}

/* Host buffers take MPI, device buffers NCCL, on the same comm; a mix is refused. */
static void mixing(void) {
  double hin[3] = {1, 2, rank}, hout[3], dgot[3];
  double *d = t_alloc(sizeof(hin));
  T_OK(gmpi_allreduce(hin, hout, 3, GMPI_FLOAT64, GMPI_SUM, comm));
  T_EQ_INT(hout[1], 2 * size);
  t_put(d, hin, sizeof(hin));
  T_OK(gmpi_allreduce(d, d, 3, GMPI_FLOAT64, GMPI_MAX, comm));
  t_get(dgot, d, sizeof(dgot));
  T_EQ_INT(dgot[2], size - 1);
  T_STATUS(gmpi_allreduce(hin, d, 3, GMPI_FLOAT64, GMPI_SUM, comm), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("host");
  /* p2p: a host message and a device message to ourselves, in flight together */
  gmpi_request_t r[4];
  double hrecv[3] = {0};
  double *drecv = t_alloc(sizeof(hin));
  T_OK(gmpi_irecv(hrecv, 3, GMPI_FLOAT64, rank, 5, comm, &r[0]));
  T_OK(gmpi_irecv(drecv, 3, GMPI_FLOAT64, rank, 6, comm, &r[1]));
  T_OK(gmpi_isend(d, 3, GMPI_FLOAT64, rank, 6, comm, &r[2]));
  T_OK(gmpi_isend(hin, 3, GMPI_FLOAT64, rank, 5, comm, &r[3]));
  T_OK(gmpi_waitall(4, r, NULL));
  t_get(hout, drecv, sizeof(hout));
  T_EQ_INT(hrecv[2], rank);
  T_EQ_INT(hout[2], size - 1);
  t_free(d);
  t_free(drecv);
}

static void other_device(void) {
  int count = 0, dev = 0;
  cudaGetDeviceCount(&count);
  gmpi_comm_device(comm, &dev);
  if (count < 2) {
    if (rank == 0) printf("other-device check skipped: only %d device visible\n", count);
    return;
  }
  void *foreign = NULL, *mine = t_alloc(64);
  cudaSetDevice((dev + 1) % count);
  cudaMalloc(&foreign, 64);
  cudaSetDevice(dev);
  T_STATUS(gmpi_allreduce(foreign, mine, 4, GMPI_FLOAT32, GMPI_SUM, comm), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("device");
  cudaSetDevice((dev + 1) % count);
  cudaFree(foreign);
  cudaSetDevice(dev);
  t_free(mine);
}

/* Stream-ordered: the allreduce runs after the user's memset and before the user's copy, all
 * on the user's stream; the call itself returns at once. */
static void stream_ordered(void) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *d = t_alloc(1024 * sizeof(int)), *h;
  cudaMallocHost((void **)&h, 1024 * sizeof(int));
  T_OK(gmpi_comm_set_stream(comm, s));
  void *got_stream = NULL;
  T_OK(gmpi_comm_stream(comm, &got_stream));
  T_EQ_PTR(got_stream, s);
  cudaMemsetAsync(d, 1, 1024 * sizeof(int), s); /* every int 0x01010101 */
  T_OK(gmpi_allreduce(d, d, 1024, GMPI_INT32, GMPI_SUM, comm));
  T_OK(gmpi_bcast(d, 1024, GMPI_INT32, 0, comm));
  cudaMemcpyAsync(h, d, 1024 * sizeof(int), cudaMemcpyDeviceToHost, s);
  T_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < 1024; i++)
    if (h[i] != 0x01010101 * size) {
      T_FAIL_("stream-ordered allreduce: element %d = %d, want %d", i, h[i], 0x01010101 * size);
      break;
    }
  T_OK(gmpi_comm_set_stream(comm, NULL));
  t_free(d);
  cudaFreeHost(h);
  cudaStreamDestroy(s);
}

/* Stream-ordered point to point: a message's buffer is read, and a receive's written, once the
 * user's stream has passed the call -- not once it passed whatever was queued after it. In
 * each pair one rank posts its half of a 1 MiB message (a pull, or a link between hosts),
 * queues an allreduce on the stream, and only then lets its partner (a plain MPI token)
 * make the other half, blocking, before the partner's allreduce. The message is matched after
 * the first rank's allreduce was queued: ordered after that allreduce, it would wait for a
 * partner that joins it only once its blocking call returned (a hang found in review).
 * Rounds 0-1: the first rank receives (even ranks, then odd); rounds 2-3: it sends. */
static void stream_ordered_p2p(void) {
  /* M as stream_ordered's allreduce: NCCL has connected that one, so the call only queues */
  enum { N = 1 << 18, M = 1024 };
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *buf = t_alloc(N * sizeof(int)), *sum = t_alloc(M * sizeof(int));
  int *h = malloc(N * sizeof(int));
  int peer = rank ^ 1, paired = peer < size;
  T_OK(gmpi_comm_set_stream(comm, s));
  for (int round = 0; round < 4; round++) {
    int first = paired && rank % 2 == round % 2, receiver = (round < 2) == first;
    int sender_rank = receiver ? peer : rank, token = round;
    cudaMemsetAsync(sum, 1, M * sizeof(int), s);
    cudaMemsetAsync(buf, receiver ? 0 : round + 1 + sender_rank, N * sizeof(int), s);
    gmpi_request_t rq = NULL;
    if (first) {
      if (receiver)
        T_OK(gmpi_irecv(buf, N, GMPI_INT32, peer, 11, comm, &rq));
      else
        T_OK(gmpi_isend(buf, N, GMPI_INT32, peer, 11, comm, &rq));
      T_OK(gmpi_allreduce(sum, sum, M, GMPI_INT32, GMPI_SUM, comm)); /* queued on s */
      MPI_Send(&token, 1, MPI_INT, peer, 77, MPI_COMM_WORLD);
      T_OK(gmpi_wait(&rq, NULL));
    } else if (paired) {
      MPI_Recv(&token, 1, MPI_INT, peer, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (receiver)
        T_OK(gmpi_recv(buf, N, GMPI_INT32, peer, 11, comm, NULL));
      else
        T_OK(gmpi_send(buf, N, GMPI_INT32, peer, 11, comm));
      T_OK(gmpi_allreduce(sum, sum, M, GMPI_INT32, GMPI_SUM, comm));
    } else {
      T_OK(gmpi_allreduce(sum, sum, M, GMPI_INT32, GMPI_SUM, comm));
    }
    T_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
    T_EQ_INT(token, round);
    t_get(h, sum, M * sizeof(int));
    int bad = 0;
    for (int i = 0; i < M; i++)
      bad += h[i] != 0x01010101 * size;
    T_EQ_INT(bad, 0);
    if (!paired) continue;
    t_get(h, buf, N * sizeof(int)); /* the receiver's data, and the sender's still intact */
    int want = (round + 1 + sender_rank) * 0x01010101;
    bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != want;
    T_EQ_INT(bad, 0);
  }
  T_OK(gmpi_comm_set_stream(comm, NULL));
  free(h);
  t_free(buf);
  t_free(sum);
  cudaStreamDestroy(s);
}

/* gmpi_sendrecv on two of the program's cudaMalloc buffers gmpi has not met before, each just
 * memset: under memops both of its posts (the send's and the receive's) wait for stream 0. */
static void sendrecv_first_seen(int round, int *h, int n) {
  size_t bytes = (size_t)n * sizeof(int);
  int *s = NULL, *r = NULL;
  T_EQ_INT(cudaMalloc((void **)&s, bytes), cudaSuccess);
  T_EQ_INT(cudaMalloc((void **)&r, bytes), cudaSuccess);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  cudaMemset(r, 0, bytes);
  cudaMemset(s, round + 2, bytes); /* every byte round + 2 */
  T_OK(gmpi_sendrecv(s, n, GMPI_INT32, right, 6, r, n, GMPI_INT32, left, 6, comm, NULL));
  t_get(h, r, bytes);
  int bad = 0;
  for (int i = 0; i < n; i++)
    bad += h[i] != (round + 2) * 0x01010101;
  T_EQ_INT(bad, 0);
  T_OK(gmpi_barrier(comm)); /* the peer has read s before it goes */
  cudaFree(s);
  cudaFree(r);
}

/* 1 MiB (a rendezvous: pulled by CUDA IPC between ranks of one host) around the ring, three
 * rounds, each from a buffer allocated for it and freed after it: the new buffer usually lands
 * where the old one was, which the receiver still maps (a driver may then refuse to open the new
 * one until the old mapping is closed). foreign: the program's own cudaMalloc, else
 * gmpi_mem_alloc. */
static void realloc_between_messages_from(int foreign) {
  enum { N = 1 << 18 };
  size_t bytes = N * sizeof(int);
  int *h = malloc(bytes);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int round = 0; h && round < 3; round++) {
    int *s = NULL, *r = NULL;
    if (foreign) {
      T_EQ_INT(cudaMalloc((void **)&s, bytes), cudaSuccess);
      T_EQ_INT(cudaMalloc((void **)&r, bytes), cudaSuccess);
    } else {
      s = t_alloc(bytes);
      r = t_alloc(bytes);
    }
    for (int i = 0; i < N; i++)
      h[i] = rank * 1000 + round * 100000 + i;
    t_put(s, h, bytes);
    T_OK(gmpi_sendrecv(s, N, GMPI_INT32, right, 7, r, N, GMPI_INT32, left, 7, comm, NULL));
    t_get(h, r, bytes);
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != left * 1000 + round * 100000 + i;
    T_EQ_INT(bad, 0);
    if (foreign) {
      cudaFree(s);
      cudaFree(r);
    } else {
      t_free(s);
      t_free(r);
    }
  }
  free(h);
}

static void realloc_between_messages(void) {
  realloc_between_messages_from(1);
  realloc_between_messages_from(0);
}

/* A buffer written by cudaMemcpy from pageable memory (which may return before its copy lands)
 * or a kernel-free cudaMemset on the default stream, then passed at once -- no synchronize --
 * to a blocking allreduce and a send: gmpi must order its work after the default stream's
 * (mpi_bench found stale elements on the H200 before it did). 4 MiB, so the copy is long.
 * foreign: the buffers come from the program's own cudaMalloc, not gmpi_mem_alloc (under
 * GMPI_DEFAULT_STREAM_ORDER=memops gmpi makes them synchronous when it first sees them). */
static void after_default_stream_from(int foreign) {
  enum { N = 1 << 20 };
  int *h = malloc(N * sizeof(int)), *d = NULL, *r = NULL;
  if (foreign) {
    T_EQ_INT(cudaMalloc((void **)&d, N * sizeof(int)), cudaSuccess);
    T_EQ_INT(cudaMalloc((void **)&r, N * sizeof(int)), cudaSuccess);
  } else {
    d = t_alloc(N * sizeof(int));
    r = t_alloc(N * sizeof(int));
  }
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++)
      h[i] = round * 1000 + rank + i % 13;
    cudaMemcpy(d, h, N * sizeof(int), cudaMemcpyHostToDevice);
    T_OK(gmpi_allreduce(d, r, N, GMPI_INT32, GMPI_SUM, comm));
    t_get(h, r, N * sizeof(int));
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != size * (round * 1000 + i % 13) + size * (size - 1) / 2;
    T_EQ_INT(bad, 0);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    gmpi_request_t rq = NULL;
    cudaMemset(r, 0, N * sizeof(int));
    T_OK(gmpi_irecv(r, N, GMPI_INT32, left, 5, comm, &rq));
    cudaMemset(d, round + 1, N * sizeof(int)); /* every byte round + 1 */
    T_OK(gmpi_send(d, N, GMPI_INT32, right, 5, comm));
    T_OK(gmpi_wait(&rq, NULL));
    t_get(h, r, N * sizeof(int));
    bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != (round + 1) * 0x01010101;
    T_EQ_INT(bad, 0);
    if (foreign) sendrecv_first_seen(round, h, N);
  }
  free(h);
  if (foreign) {
    cudaFree(d);
    cudaFree(r);
  } else {
    t_free(d);
    t_free(r);
  }
}

static void after_default_stream(void) {
  after_default_stream_from(0);
  after_default_stream_from(1);
}

/* Nonblocking collectives and the default stream. (1) One posted right after a cudaMemcpy from
 * pageable memory reads what was copied. (2) A blocking collective while it is pending. (3)
 * While it is pending, rank 0 makes a host call that waits for stream 0 (a synchronous
 * cudaMemcpy), then sends the message the other ranks wait for before they post theirs: the
 * pending collective must not hold stream 0 back (it would wait for ranks that wait for rank
 * 0), so it cannot run on a blocking stream. */
static void nonblocking_default_stream(void) {
  enum { N = 1 << 20 };
  size_t bytes = N * sizeof(int);
  int *h = malloc(bytes), *d = t_alloc(bytes), *r = t_alloc(bytes);
  int *d2 = t_alloc(bytes), *r2 = t_alloc(bytes);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++)
      h[i] = round * 1000 + rank + i % 13;
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    gmpi_request_t rq = NULL;
    int token = -1;
    if (rank == 0) {
      T_OK(gmpi_iallreduce(d, r, N, GMPI_INT32, GMPI_SUM, comm, &rq));
      int first = 0;
      cudaMemcpy(&first, d2, sizeof(int), cudaMemcpyDeviceToHost); /* waits for stream 0 */
      token = round;
      for (int peer = 1; peer < size; peer++)
        T_OK(gmpi_send(&token, 1, GMPI_INT32, peer, 9, comm));
    } else {
      T_OK(gmpi_recv(&token, 1, GMPI_INT32, 0, 9, comm, NULL));
      T_OK(gmpi_iallreduce(d, r, N, GMPI_INT32, GMPI_SUM, comm, &rq));
    }
    T_EQ_INT(token, round);
    cudaMemset(d2, round + 1, bytes);
    T_OK(gmpi_allreduce(d2, r2, N, GMPI_INT32, GMPI_SUM, comm));
    T_OK(gmpi_wait(&rq, NULL));
    t_get(h, r, bytes);
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != size * (round * 1000 + i % 13) + size * (size - 1) / 2;
    T_EQ_INT(bad, 0);
    t_get(h, r2, bytes);
    bad = 0;
    for (int i = 0; i < N; i++)
      bad += h[i] != size * (round + 1) * 0x01010101;
    T_EQ_INT(bad, 0);
  }
  free(h);
  t_free(d);
  t_free(r);
  t_free(d2);
  t_free(r2);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  gmpi_backend_t backend;
  gmpi_comm_backend(comm, &backend);
  if (backend != GMPI_BACKEND_CUDA) {
    gmpi_comm_t probe = NULL;
    setenv("GMPI_BACKEND", "cuda", 1);
    gmpi_status_t st = gmpi_init(MPI_COMM_WORLD, &probe);
    gmpi_finalize(&probe);
    char why[1100];
    snprintf(why, sizeof(why), "the cuda backend cannot run here (%s: %s)", t_status_name(st),
             gmpi_last_error());
    return t_skip("cuda", why);
  }
  /* Each step named as it starts (rank 0), so that a run cut off says where it stopped. */
#define STEP(f)                                                                                    \
  do {                                                                                             \
    if (rank == 0) fprintf(stderr, "test_cuda: %s\n", #f);                                         \
    f();                                                                                           \
  } while (0)
  STEP(binding);
  STEP(interop);
  STEP(budget);
  STEP(kinds);
  STEP(mixing);
  STEP(other_device);
  STEP(stream_ordered);
  STEP(stream_ordered_p2p);
  STEP(after_default_stream);
  STEP(nonblocking_default_stream);
  STEP(realloc_between_messages);
  return t_finish("cuda");
}
