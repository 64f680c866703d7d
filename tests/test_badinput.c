/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input, table-driven: every public call with each bad argument returns the documented
 * status and a gmpi_last_error() that names the argument (and the rank) -- never a crash or
 * a hang -- and the comm keeps working afterwards. */
#include <limits.h>
#include <stdint.h>

#include "test_util.h"

static gmpi_comm_t comm, dead;
static int rank, size;
static char buf[256], out[256];
static gmpi_request_t req;
static gmpi_msg_status_t st;
static int flag;

typedef struct {
  const char *what;     /* the case, for the failure message */
  gmpi_status_t expect; /* documented status */
  const char *mentions; /* a word gmpi_last_error() must contain */
} bad_case_t;

#define CASE(expect_, word_, call_)                                                                \
  do {                                                                                             \
    bad_case_t c_ = {#call_, expect_, word_};                                                      \
    gmpi_status_t s_ = (call_);                                                                    \
    if (s_ != c_.expect)                                                                           \
      T_FAIL_("%s returned %s, expected %s (%s)", c_.what, t_status_name(s_),                      \
              t_status_name(c_.expect), gmpi_last_error());                                        \
    else if (!strstr(gmpi_last_error(), c_.mentions))                                              \
      T_FAIL_("%s: last error does not mention '%s': %s", c_.what, c_.mentions,                    \
              gmpi_last_error());                                                                  \
  } while (0)

#define INV GMPI_ERR_INVALID_ARG

static void collectives(void) {
  char *p = buf;
  CASE(INV, "sendbuf", gmpi_allreduce(NULL, out, 3, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "recvbuf", gmpi_allreduce(buf, NULL, 3, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "dtype", gmpi_allreduce(buf, out, 1, (gmpi_dtype_t)99, GMPI_SUM, comm));
  CASE(INV, "dtype", gmpi_allreduce(buf, out, 1, (gmpi_dtype_t)-1, GMPI_SUM, comm));
  CASE(INV, "op", gmpi_allreduce(buf, out, 1, GMPI_INT32, (gmpi_op_t)42, comm));
  CASE(INV, "band", gmpi_allreduce(buf, out, 1, GMPI_FLOAT32, GMPI_BAND, comm));
  CASE(INV, "overlap", gmpi_allreduce(p, p + 4, 4, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "count", gmpi_allreduce(buf, out, SIZE_MAX / 2, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "root", gmpi_bcast(buf, 1, GMPI_INT8, -1, comm));
  CASE(INV, "root", gmpi_bcast(buf, 1, GMPI_INT8, size, comm));
  CASE(INV, "buf", gmpi_bcast(NULL, 1, GMPI_INT8, 0, comm));
  CASE(INV, "root", gmpi_reduce(buf, out, 1, GMPI_INT8, GMPI_SUM, size + 3, comm));
  CASE(INV, "sendbuf", gmpi_reduce(NULL, out, 1, GMPI_INT8, GMPI_SUM, 0, comm));
  CASE(INV, "lxor", gmpi_reduce(buf, out, 1, GMPI_COMPLEX64, GMPI_LXOR, 0, comm));
  CASE(INV, "recvbuf", gmpi_allgather(buf, NULL, 1, GMPI_INT8, comm));
  CASE(INV, "sendbuf", gmpi_reduce_scatter(NULL, out, 1, GMPI_INT8, GMPI_SUM, comm));
  CASE(INV, "min", gmpi_reduce_scatter(buf, out, 1, GMPI_BOOL, GMPI_MIN, comm));
  CASE(INV, "sendbuf", gmpi_alltoall(NULL, out, 1, GMPI_INT8, comm));
  CASE(INV, "dtype", gmpi_alltoall(buf, out, 1, GMPI_DTYPE_COUNT, comm));
}

/* The newer collectives. Only arguments every rank finds wrong: a root-only argument wrong at
 * the root alone would leave the other ranks inside the collective. */
static void rooted_v_and_nonblocking(void) {
  size_t counts[64] = {0}, displs[64] = {0}, huge[64];
  for (int r = 0; r < 64; r++)
    huge[r] = SIZE_MAX / 2;
  CASE(INV, "root", gmpi_gather(buf, out, 1, GMPI_INT8, size, comm));
  CASE(INV, "root", gmpi_scatter(buf, out, 1, GMPI_INT8, -1, comm));
  CASE(INV, "dtype", gmpi_gather(buf, out, 1, (gmpi_dtype_t)99, 0, comm));
  CASE(INV, "recvcounts", gmpi_allgatherv(buf, 0, out, NULL, displs, GMPI_INT8, comm));
  CASE(INV, "displs", gmpi_allgatherv(buf, 0, out, counts, NULL, GMPI_INT8, comm));
  CASE(INV, "recvcounts[", gmpi_allgatherv(buf, 1, out, counts, displs, GMPI_INT8, comm));
  CASE(INV, "recvcounts", gmpi_allgatherv(buf, 0, out, huge, displs, GMPI_INT64, comm));
  CASE(INV, "root", gmpi_gatherv(buf, 0, out, counts, displs, GMPI_INT8, size, comm));
  CASE(INV, "root", gmpi_scatterv(buf, counts, displs, out, 0, GMPI_INT8, -3, comm));
  CASE(INV, "sendcounts", gmpi_alltoallv(buf, NULL, displs, out, counts, displs, GMPI_INT8, comm));
  CASE(INV, "rdispls", gmpi_alltoallv(buf, counts, displs, out, counts, NULL, GMPI_INT8, comm));
  /* A displacement out of bounds is blamed on the displacements, not on the counts. */
  size_t ones[64], far[64];
  for (int r = 0; r < 64; r++) {
    ones[r] = 1;
    far[r] = SIZE_MAX;
  }
  CASE(INV,
       "argument 'displs[0]' = 18446744073709551615 is out of bounds: that displacement + "
       "recvcounts[0] = 1 overflows",
       gmpi_allgatherv(buf, 1, out, ones, far, GMPI_INT8, comm));
  CASE(INV,
       "argument 'sdispls[0]' = 18446744073709551615 is out of bounds: that displacement + "
       "sendcounts[0] = 1",
       gmpi_alltoallv(buf, ones, far, out, ones, displs, GMPI_INT8, comm));
  /* An overflowing count is printed as the count, not as 1. */
  CASE(INV, "= 4611686018427387904 is too large: 4611686018427387904 elements x 4 bytes",
       gmpi_allreduce(buf, out, (size_t)1 << 62, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "recvcounts", gmpi_reduce_scatterv(buf, out, NULL, GMPI_INT32, GMPI_SUM, comm));
  CASE(INV, "op", gmpi_reduce_scatterv(buf, out, counts, GMPI_INT32, (gmpi_op_t)77, comm));
  CASE(INV, "band", gmpi_reduce_scatterv(buf, out, counts, GMPI_FLOAT64, GMPI_BAND, comm));
  CASE(INV, "request", gmpi_iallreduce(buf, out, 1, GMPI_INT32, GMPI_SUM, comm, NULL));
  CASE(INV, "request", gmpi_ibarrier(comm, NULL));
  CASE(INV, "dtype", gmpi_iallreduce(buf, out, 1, (gmpi_dtype_t)99, GMPI_SUM, comm, &req));
  CASE(INV, "root", gmpi_ibcast(buf, 1, GMPI_INT8, size, comm, &req));
  CASE(INV, "recvcounts", gmpi_iallgatherv(buf, 0, out, NULL, displs, GMPI_INT8, comm, &req));
  CASE(INV, "recvcounts", gmpi_ireduce_scatterv(buf, out, NULL, GMPI_INT32, GMPI_SUM, comm, &req));
  CASE(INV, "request", gmpi_ireduce_scatterv(buf, out, counts, GMPI_INT32, GMPI_SUM, comm, NULL));
  CASE(INV, "overlap", gmpi_ialltoall(buf, buf + 1, 4, GMPI_INT8, comm, &req));
  /* Errors name the nonblocking call the user made. */
  CASE(INV, "gmpi_igather (rank", gmpi_igather(buf, out, 1, GMPI_INT8, size, comm, &req));
}

static void point_to_point(void) {
  CASE(INV, "dest", gmpi_send(buf, 1, GMPI_INT8, -1, 0, comm));
  CASE(INV, "dest", gmpi_send(buf, 1, GMPI_INT8, size, 0, comm));
  CASE(INV, "tag", gmpi_send(buf, 1, GMPI_INT8, 0, -5, comm));
  CASE(INV, "tag", gmpi_send(buf, 1, GMPI_INT8, 0, GMPI_ANY_TAG, comm)); /* not on a send */
  CASE(INV, "source", gmpi_recv(buf, 1, GMPI_INT8, size, 0, comm, &st));
  CASE(INV, "source", gmpi_recv(buf, 1, GMPI_INT8, -7, 0, comm, &st));
  CASE(INV, "tag", gmpi_recv(buf, 1, GMPI_INT8, 0, -7, comm, &st));
  CASE(INV, "buf", gmpi_irecv(NULL, 4, GMPI_INT8, 0, 0, comm, &req));
  CASE(INV, "request", gmpi_isend(buf, 1, GMPI_INT8, 0, 0, comm, NULL));
  CASE(INV, "dtype", gmpi_isend(buf, 1, (gmpi_dtype_t)77, 0, 0, comm, &req));
  CASE(INV, "count", gmpi_isend(buf, SIZE_MAX, GMPI_INT64, 0, 0, comm, &req));
  CASE(INV, "request", gmpi_wait(NULL, &st));
  CASE(INV, "count", gmpi_waitall(-1, &req, NULL));
  CASE(INV, "requests", gmpi_waitall(2, NULL, NULL));
  CASE(INV, "request", gmpi_test(NULL, &flag, &st));
  req = NULL;
  CASE(INV, "done", gmpi_test(&req, NULL, &st));
  CASE(INV, "dest", gmpi_sendrecv(buf, 1, GMPI_INT8, -3, 0, out, 1, GMPI_INT8, 0, 0, comm, &st));
  /* sendrecv's errors say which half: its parameters' own names. */
  CASE(INV, "'sendtype' = 99",
       gmpi_sendrecv(buf, 1, (gmpi_dtype_t)99, 0, 0, out, 1, GMPI_INT8, 0, 0, comm, &st));
  CASE(INV, "'recvtype' = 99",
       gmpi_sendrecv(buf, 1, GMPI_INT8, 0, 0, out, 1, (gmpi_dtype_t)99, 0, 0, comm, &st));
  CASE(INV, "'recvbuf' is NULL with recvcount 1",
       gmpi_sendrecv(buf, 1, GMPI_INT8, 0, 0, NULL, 1, GMPI_INT8, 0, 0, comm, &st));
  CASE(INV, "'sendtag' = -3",
       gmpi_sendrecv(buf, 1, GMPI_INT8, 0, -3, out, 1, GMPI_INT8, 0, 0, comm, &st));
  /* Errors name the function the user called, not the one it is built on. */
  CASE(INV, "gmpi_send (rank", gmpi_send(buf, 1, GMPI_INT8, 0, -5, comm));
  CASE(INV, "gmpi_recv (rank", gmpi_recv(buf, 1, GMPI_INT8, 0, -7, comm, &st));
  CASE(INV, "gmpi_sendrecv (rank",
       gmpi_sendrecv(buf, 1, GMPI_INT8, 0, -3, out, 1, GMPI_INT8, 0, 0, comm, &st));
  CASE(INV, "gmpi_isend (rank", gmpi_isend(buf, 1, GMPI_INT8, 0, -5, comm, &req));
}

/* Calls on a NULL or finalized comm name the comm; calls with NULL outputs name the output. */
static void comms_and_outputs(void) {
  int i;
  gmpi_comm_t sub;
  void *p;
  CASE(INV, "comm", gmpi_barrier(NULL));
  CASE(INV, "comm", gmpi_allreduce(buf, out, 1, GMPI_INT8, GMPI_SUM, NULL));
  CASE(INV, "comm", gmpi_send(buf, 1, GMPI_INT8, 0, 0, NULL));
  CASE(INV, "comm", gmpi_comm_rank(NULL, &i));
  CASE(INV, "live", gmpi_barrier(dead));
  CASE(INV, "live", gmpi_bcast(buf, 1, GMPI_INT8, 0, dead));
  CASE(INV, "live", gmpi_irecv(buf, 1, GMPI_INT8, 0, 0, dead, &req));
  CASE(INV, "live", gmpi_comm_size(dead, &i));
  CASE(INV, "live", gmpi_finalize(&dead));
  CASE(INV, "rank", gmpi_comm_rank(comm, NULL));
  CASE(INV, "size", gmpi_comm_size(comm, NULL));
  CASE(INV, "backend", gmpi_comm_backend(comm, NULL));
  CASE(INV, "device", gmpi_comm_device(comm, NULL));
  CASE(INV, "color", gmpi_comm_split(comm, -3, 0, &sub));
  CASE(INV, "newcomm", gmpi_comm_split(comm, 0, 0, NULL));
  CASE(INV, "ptr", gmpi_mem_alloc(comm, 8, NULL));
  CASE(INV, "dst", gmpi_mem_copy(comm, NULL, buf, 8));
  CASE(INV, "gmpi_mem_alloc", gmpi_mem_free(comm, buf)); /* not ours: refused, not free()d */
  CASE(INV, "comm", gmpi_mem_alloc(NULL, 8, &p));
  CASE(INV, "comm", gmpi_init(MPI_COMM_WORLD, NULL));
  CASE(INV, "mpi_comm", gmpi_init(MPI_COMM_NULL, &sub));
  /* Failures on a comm name the rank they happened on. */
  char want[32];
  snprintf(want, sizeof(want), "(rank %d)", rank);
  CASE(INV, want, gmpi_bcast(buf, 1, GMPI_INT8, -1, comm));
}

/* The launcher's settings (GMPI_VISIBLE_DEVICES=0,0 of scripts/shared-gpu-rank, ctest's
 * GMPI_BACKEND) come back after each case, so later inits run as the test was started. */
static char *env_save(const char *var) {
  const char *v = getenv(var);
  return v ? strdup(v) : NULL;
}
static void env_restore(const char *var, char *saved) {
  if (saved)
    setenv(var, saved, 1);
  else
    unsetenv(var);
  free(saved);
}

/* A bad GMPI_* value fails gmpi_init naming the variable and the value, on every rank. */
static void environment(gmpi_backend_t backend) {
  static const struct {
    const char *var, *value;
    gmpi_status_t expect;
    const char *mentions;
  } env[] = {
      {"GMPI_BACKEND", "bogus", INV, "GMPI_BACKEND='bogus'"},
      {"GMPI_TIMEOUT", "-1", INV, "GMPI_TIMEOUT='-1'"},
      {"GMPI_TIMEOUT", "abc", INV, "GMPI_TIMEOUT='abc'"},
      {"GMPI_DEBUG", "loud", INV, "GMPI_DEBUG='loud'"},
      {"GMPI_CHECK", "2", INV, "GMPI_CHECK='2'"},
      {"GMPI_P2P", "fast", INV, "GMPI_P2P='fast'"},
      {"GMPI_DEFAULT_STREAM_ORDER", "idle", INV, "one of 0, 1, pending"},
      {"GMPI_GPU_MEM_FRACTION", "1.5", INV, "GMPI_GPU_MEM_FRACTION='1.5'"},
      {"GMPI_VISIBLE_DEVICES", "a,b", INV, "GMPI_VISIBLE_DEVICES='a,b'"},
      {"GMPI_MAX_CHUNK", "0", INV, "GMPI_MAX_CHUNK='0'"},
      {"GMPI_PLAN_PACK_BYTES", "-1", INV, "GMPI_PLAN_PACK_BYTES='-1'"},
      {"GMPI_PLAN_PACK_BYTES", "4K", INV, "GMPI_PLAN_PACK_BYTES='4K'"},
      {"GMPI_PLAN_PACK_BYTES", "1.5", INV, "GMPI_PLAN_PACK_BYTES='1.5'"},
      {"GMPI_NCCL_MEM", "1", INV, "GMPI_NCCL_MEM='1'"},
      {"GMPI_NCCL_SPLIT_SHARE", "yes", INV, "GMPI_NCCL_SPLIT_SHARE='yes'"},
      {"GMPI_LINKS", "early", INV, "GMPI_LINKS='early'"},
      {"GMPI_DEFAULT_STREAM_ORDER", "sync", INV, "GMPI_DEFAULT_STREAM_ORDER='sync'"},
      {"GMPI_BACKEND", "rocm", GMPI_ERR_NO_DEVICE, "ROCm"},
  };
  for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
    gmpi_comm_t c = NULL;
    char *saved = env_save(env[i].var);
    setenv(env[i].var, env[i].value, 1);
    CASE(env[i].expect, env[i].mentions, gmpi_init(MPI_COMM_WORLD, &c));
    T_EQ_PTR(c, NULL);
    char own_rank[32]; /* a bad variable is reported with this rank's number */
    snprintf(own_rank, sizeof(own_rank), "gmpi_init (rank %d)", rank);
    T_ERROR_MENTIONS(own_rank);
    env_restore(env[i].var, saved);
  }
  /* Asking for cuda: a clear NO_DEVICE where there is none, never a silent cpu fallback. */
  gmpi_comm_t c = NULL;
  char *saved = env_save("GMPI_BACKEND");
  setenv("GMPI_BACKEND", "cuda", 1);
  if (backend == GMPI_BACKEND_CPU) {
    CASE(GMPI_ERR_NO_DEVICE, "GMPI_BACKEND=cuda", gmpi_init(MPI_COMM_WORLD, &c));
  } else {
    T_OK(gmpi_init(MPI_COMM_WORLD, &c));
    T_OK(gmpi_finalize(&c));
  }
  env_restore("GMPI_BACKEND", saved);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  gmpi_backend_t backend;
  T_OK(gmpi_comm_backend(comm, &backend));
  T_OK(gmpi_init(MPI_COMM_WORLD, &dead));
  gmpi_comm_t copy = dead;
  T_OK(gmpi_finalize(&copy));

  collectives();
  rooted_v_and_nonblocking();
  point_to_point();
  comms_and_outputs();
  environment(backend);
  T_TRUE(strcmp(gmpi_strerror(GMPI_SUCCESS), "success") == 0);
  /* The hint at GMPI_DEBUG=info only where the log says more than gmpi_last_error(). */
  T_TRUE(strstr(gmpi_strerror(GMPI_ERR_TIMEOUT), "GMPI_DEBUG=info") != NULL);
  T_TRUE(strstr(gmpi_strerror(GMPI_ERR_TRUNCATE), "GMPI_DEBUG") == NULL);
  T_TRUE(strcmp(gmpi_status_name(GMPI_ERR_TIMEOUT), "GMPI_ERR_TIMEOUT") == 0);
  T_TRUE(strcmp(gmpi_status_name((gmpi_status_t)1234), "GMPI_?") == 0);
  T_TRUE(gmpi_strerror((gmpi_status_t)1234) != NULL);

  /* After all that, the comm works. */
  int one = 1, sum = 0;
  T_OK(gmpi_allreduce(&one, &sum, 1, GMPI_INT32, GMPI_SUM, comm));
  T_EQ_INT(sum, backend == GMPI_BACKEND_CPU ? size : sum); /* host buffers: cpu path */
  T_OK(gmpi_barrier(comm));
  return t_finish("bad input");
}
