/* SPDX-License-Identifier: BSD-3-Clause */
/* Baselines that run gmpi's own call, in the run's mode, on device memory of another kind
 * (GMPI_NCCL_MEM, docs/design.md): each on a second comm made with the variable set, and on
 * send and receive buffers as large as the run's from gmpi_mem_alloc on that comm. gmpi's own
 * rows keep the memory of the run's environment (cudaMalloc by default), so one run compares
 * the kinds in interleaved rounds:
 *   ncclalloc -- ncclMemAlloc'd buffers, not registered;
 *   ncclreg   -- the same, registered with the comm's NCCL communicator (ncclCommRegister);
 *   ncclwin   -- the same, symmetric windows (ncclCommWindowRegister, collective).
 * ratio = gmpi time / baseline time: below 1, the run's own memory is faster.
 * Each is made on first use; every rank asks for the baselines in the same order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct {
  const char *mode; /* its GMPI_NCCL_MEM */
  gmpi_comm_t comm;
  void *send, *recv;
  char why[512]; /* why it cannot run, once known */
} memkind_t;

static memkind_t kinds[] = {{.mode = "alloc"}, {.mode = "register"}, {.mode = "window"}};

static void kind_close(memkind_t *k) {
  if (!k->comm) return;
  gmpi_mem_free(k->comm, k->send);
  gmpi_mem_free(k->comm, k->recv);
  gmpi_finalize(&k->comm);
  k->send = k->recv = NULL;
}

/* The comm and its buffers, on every rank or on none. */
static void kind_open(memkind_t *k, const bench_ctx_t *c) {
  char *saved = getenv("GMPI_NCCL_MEM") ? strdup(getenv("GMPI_NCCL_MEM")) : NULL;
  setenv("GMPI_NCCL_MEM", k->mode, 1);
  gmpi_status_t st = gmpi_init(MPI_COMM_WORLD, &k->comm);
  if (saved)
    setenv("GMPI_NCCL_MEM", saved, 1);
  else
    unsetenv("GMPI_NCCL_MEM");
  free(saved);
  if (st == GMPI_SUCCESS) st = gmpi_mem_alloc(k->comm, c->send_cap, &k->send);
  if (st == GMPI_SUCCESS) st = gmpi_mem_alloc(k->comm, c->recv_cap, &k->recv);
  int failed = st != GMPI_SUCCESS, anywhere = 0;
  if (failed) snprintf(k->why, sizeof(k->why), "GMPI_NCCL_MEM=%s: %s", k->mode, gmpi_last_error());
  MPI_Allreduce(&failed, &anywhere, 1, MPI_INT, MPI_LOR, c->mpi);
  if (anywhere && !failed)
    snprintf(k->why, sizeof(k->why), "GMPI_NCCL_MEM=%s failed on another rank", k->mode);
  if (anywhere) kind_close(k);
}

static int kind_available(memkind_t *k, const bench_ctx_t *c, char *why, size_t len) {
  if (c->backend != GMPI_BACKEND_CUDA) {
    snprintf(why, len, "GMPI_NCCL_MEM is the cuda backend's (this run's backend has no GPU)");
    return 0;
  }
  if (!k->comm && !k->why[0]) kind_open(k, c);
  if (!k->comm) snprintf(why, len, "%s", k->why);
  return k->comm != NULL;
}

static void kind_swap(memkind_t *k, bench_ctx_t *c) {
  gmpi_comm_t comm = c->comm;
  void *send = c->send, *recv = c->recv;
  c->comm = k->comm, c->send = k->send, c->recv = k->recv;
  k->comm = comm, k->send = send, k->recv = recv;
}

/* gmpi's call as the mode makes it; c holds the kind's comm and buffers meanwhile (swap). */
static int kind_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  return bench_gmpi_impl(c, coll, s);
}

static int alloc_available(const bench_ctx_t *c, char *why, size_t len) {
  return kind_available(&kinds[0], c, why, len);
}
static void alloc_swap(bench_ctx_t *c) { kind_swap(&kinds[0], c); }
static int reg_available(const bench_ctx_t *c, char *why, size_t len) {
  return kind_available(&kinds[1], c, why, len);
}
static void reg_swap(bench_ctx_t *c) { kind_swap(&kinds[1], c); }
static int win_available(const bench_ctx_t *c, char *why, size_t len) {
  return kind_available(&kinds[2], c, why, len);
}
static void win_swap(bench_ctx_t *c) { kind_swap(&kinds[2], c); }

const bench_baseline_t bench_baseline_ncclalloc = {"ncclalloc", alloc_available, kind_run, 1,
                                                   alloc_swap};
const bench_baseline_t bench_baseline_ncclreg = {"ncclreg", reg_available, kind_run, 1, reg_swap};
const bench_baseline_t bench_baseline_ncclwin = {"ncclwin", win_available, kind_run, 1, win_swap};

void bench_memkind_teardown(void) {
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    kind_close(&kinds[i]);
}
