/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi_mem_alloc's blocks from NCCL (GMPI_NCCL_MEM: alloc, register, window; the ctest variant
 * sets it, "window" when unset): the budget counts them, they classify as device memory,
 * collectives and a plan on them give exact values on every rank, a dup and a split comm use
 * them and allocate their own, a comm freed before its blocks leaves them usable, and under
 * window a size that differs between ranks fails on every rank. Skips, saying why, without a
 * GPU (docs/design.md, "NCCL memory for gmpi_mem_alloc"). */
#include <stdint.h>

#include "test_util.h"

#define N 4096 /* elements per rank */

static int rank, size;
static gmpi_comm_t comm;
static const char *mode;

static int window_mode(void) { return strcmp(mode, "window") == 0; }

static void *take(gmpi_comm_t c, size_t bytes) {
  void *p = NULL;
  T_OK(gmpi_mem_alloc(c, bytes, &p));
  return p;
}

/* NCCL's blocks are counted at the driver's granularity: at least what was asked for, in whole
 * 4 KiB pages; all of it comes back on free. */
static void budget(void) {
  size_t lib, user0, user1, user2;
  T_OK(gmpi_comm_mem_usage(comm, &lib, &user0));
  void *p = take(comm, 1 << 20);
  T_OK(gmpi_comm_mem_usage(comm, &lib, &user1));
  T_TRUE(user1 - user0 >= (size_t)1 << 20);
  T_EQ_SIZE((user1 - user0) % 4096, 0);
  int dev = 0;
  T_OK(gmpi_mem_is_device(comm, (char *)p + 12345, &dev));
  T_EQ_INT(dev, 1);
  T_OK(gmpi_mem_free(comm, p));
  T_OK(gmpi_comm_mem_usage(comm, &lib, &user2));
  T_EQ_SIZE(user2, user0);
  if (rank == 0) printf("GMPI_NCCL_MEM=%s: 1 MiB counted as %zu bytes\n", mode, user1 - user0);
}

/* Rank r's input: small integers, so sums are exact in float32. */
static float value(int r, size_t i, int round) { return (float)((r * 5 + (int)i + round) % 11); }

static void put_input(float *dev, int round) {
  float *h = t_host((size_t)N * (size_t)size * sizeof(float));
  for (size_t i = 0; i < (size_t)N * (size_t)size; i++)
    h[i] = value(rank, i, round);
  t_put(dev, h, (size_t)N * (size_t)size * sizeof(float));
  free(h);
}

/* out[i] == the sum over ranks of value(r, first + i, round), for n elements. */
static void expect_sums(const float *dev, size_t first, size_t n, int round) {
  float *h = t_host(n * sizeof(float));
  t_get(h, dev, n * sizeof(float));
  long wrong = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int r = 0; r < size; r++)
      want += value(r, first + i, round);
    if (h[i] != want && wrong++ < 3) T_EQ_INT(h[i], want);
  }
  T_EQ_INT(wrong, 0);
  free(h);
}

/* Allreduce (out of and in place), reduce_scatter, allgather and bcast on blocks of c. */
static void collectives_on(gmpi_comm_t c, float *in, float *out, int round) {
  size_t all = (size_t)N * (size_t)size;
  put_input(in, round);
  T_OK(gmpi_allreduce(in, out, all, GMPI_FLOAT32, GMPI_SUM, c));
  expect_sums(out, 0, all, round);
  T_OK(gmpi_allreduce(in, in, all, GMPI_FLOAT32, GMPI_SUM, c));
  expect_sums(in, 0, all, round);
  put_input(in, round + 1);
  T_OK(gmpi_reduce_scatter(in, out, N, GMPI_FLOAT32, GMPI_SUM, c));
  expect_sums(out, (size_t)rank * N, N, round + 1);
  /* allgather of each rank's reduced block: the whole sum, on every rank */
  T_OK(gmpi_allgather(out, in, N, GMPI_FLOAT32, c));
  expect_sums(in, 0, all, round + 1);
  int root = size - 1;
  if (rank == root) put_input(out, round + 2);
  T_OK(gmpi_bcast(out, all, GMPI_FLOAT32, root, c));
  float *h = t_host(all * sizeof(float));
  t_get(h, out, all * sizeof(float));
  long wrong = 0;
  for (size_t i = 0; i < all; i++)
    if (h[i] != value(root, i, round + 2) && wrong++ < 3) T_EQ_INT(h[i], value(root, i, round + 2));
  T_EQ_INT(wrong, 0);
  free(h);
}

static void collectives(void) {
  size_t bytes = (size_t)N * (size_t)size * sizeof(float);
  float *in = take(comm, bytes), *out = take(comm, bytes);
  collectives_on(comm, in, out, 0);
  T_OK(gmpi_mem_free(comm, in));
  T_OK(gmpi_mem_free(comm, out));
}

/* A plan of eight allreduces on slices of two blocks (which fuse) and a ring exchange on a
 * third: replayed with new inputs each time, exact on every rank. */
static void plan(void) {
  size_t all = (size_t)N * (size_t)size, slice = all / 8;
  float *in = take(comm, all * sizeof(float)), *out = take(comm, all * sizeof(float));
  float *ring = take(comm, 2 * N * sizeof(float));
  gmpi_plan_t p = NULL;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  T_OK(gmpi_plan_begin(comm));
  for (int k = 0; k < 8; k++)
    T_OK(gmpi_allreduce(in + k * slice, out + k * slice, slice, GMPI_FLOAT32, GMPI_SUM, comm));
  gmpi_request_t r[2];
  T_OK(gmpi_irecv(ring + N, N, GMPI_FLOAT32, left, 7, comm, &r[0]));
  T_OK(gmpi_isend(ring, N, GMPI_FLOAT32, right, 7, comm, &r[1]));
  T_OK(gmpi_waitall(2, r, NULL));
  T_OK(gmpi_plan_end(comm, &p));
  for (int round = 0; round < 3; round++) {
    put_input(in, round);
    float *h = t_host(N * sizeof(float));
    for (size_t i = 0; i < N; i++)
      h[i] = (float)(rank * 1000 + (int)i + round);
    t_put(ring, h, N * sizeof(float));
    T_OK(gmpi_plan_run(p));
    expect_sums(out, 0, all, round);
    t_get(h, ring + N, N * sizeof(float));
    long wrong = 0;
    for (size_t i = 0; i < N; i++)
      if (h[i] != (float)(left * 1000 + (int)i + round) && wrong++ < 3)
        T_EQ_INT(h[i], left * 1000 + (int)i + round);
    T_EQ_INT(wrong, 0);
    free(h);
  }
  T_OK(gmpi_plan_free(&p));
  T_OK(gmpi_mem_free(comm, in));
  T_OK(gmpi_mem_free(comm, out));
  T_OK(gmpi_mem_free(comm, ring));
}

/* A dup and a split (by parity) comm: the world's blocks on them (plain memory to their NCCL
 * communicators, alike on every rank), then blocks of their own; each comm is freed before its
 * blocks, which stay usable until gmpi_mem_free. */
static void derived(void) {
  size_t bytes = (size_t)N * (size_t)size * sizeof(float);
  float *in = take(comm, bytes), *out = take(comm, bytes);
  gmpi_comm_t dup = NULL, half = NULL;
  T_OK(gmpi_comm_dup(comm, &dup));
  collectives_on(dup, in, out, 10);
  float *din = take(dup, bytes), *dout = take(dup, bytes);
  collectives_on(dup, din, dout, 20);
  T_OK(gmpi_comm_split(comm, rank % 2, rank, &half));
  int half_size = 0;
  T_OK(gmpi_comm_size(half, &half_size));
  float *hblock = take(half, sizeof(float) * N);
  float *h = t_host(N * sizeof(float));
  for (size_t i = 0; i < N; i++)
    h[i] = (float)(rank + (int)i);
  t_put(hblock, h, N * sizeof(float));
  T_OK(gmpi_allreduce(hblock, hblock, N, GMPI_FLOAT32, GMPI_SUM, half));
  t_get(h, hblock, N * sizeof(float));
  float ranks_sum = 0; /* the ranks of this rank's parity */
  for (int r = rank % 2; r < size; r += 2)
    ranks_sum += (float)r;
  T_EQ_INT(h[7], ranks_sum + 7.0f * (float)half_size);
  T_OK(gmpi_comm_free(&half));
  T_OK(gmpi_comm_free(&dup));
  /* their comms are gone: the blocks are plain device memory of this rank now */
  collectives_on(comm, din, dout, 30);
  t_get(h, hblock, N * sizeof(float));
  T_EQ_INT(h[7], ranks_sum + 7.0f * (float)half_size);
  T_OK(gmpi_mem_free(comm, hblock));
  T_OK(gmpi_mem_free(comm, din));
  T_OK(gmpi_mem_free(comm, dout));
  T_OK(gmpi_mem_free(comm, in));
  T_OK(gmpi_mem_free(comm, out));
  free(h);
}

/* Under window gmpi_mem_alloc is collective and every rank must ask for the same size: one
 * that asks for another fails on every rank, touches no pointer, and the comm goes on. */
static void window_sizes_differ(void) {
  if (!window_mode() || size < 2) return;
  void *p = (void *)1;
  T_STATUS(gmpi_mem_alloc(comm, rank == 0 ? 4096 : 8192, &p), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS(rank == 0 ? "rank 1" : "rank 0 asked for 4096");
  T_EQ_PTR(p, (void *)1);
  float *in = take(comm, sizeof(float) * N * (size_t)size);
  float *out = take(comm, sizeof(float) * N * (size_t)size);
  collectives_on(comm, in, out, 40);
  T_OK(gmpi_mem_free(comm, in));
  T_OK(gmpi_mem_free(comm, out));
}

int main(int argc, char **argv) {
  if (!getenv("GMPI_NCCL_MEM")) setenv("GMPI_NCCL_MEM", "window", 1);
  mode = getenv("GMPI_NCCL_MEM");
  comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  gmpi_backend_t backend;
  gmpi_comm_backend(comm, &backend);
  if (backend != GMPI_BACKEND_CUDA) {
    const char *why = "";
    gmpi_comm_backend_reason(comm, &why);
    char text[1100];
    snprintf(text, sizeof(text), "GMPI_NCCL_MEM is the cuda backend's; this comm is %s (%s)",
             gmpi_backend_name(backend), why);
    return t_skip("ncclmem", text);
  }
  if (strcmp(mode, "off") == 0) return t_skip("ncclmem", "GMPI_NCCL_MEM=off: nothing to test");
  budget();
  collectives();
  plan();
  derived();
  window_sizes_differ();
  return t_finish("ncclmem");
}
