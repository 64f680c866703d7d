/* SPDX-License-Identifier: BSD-3-Clause */
/* Counts above INT_MAX (2^31 + 5 int8 elements): allreduce in place, bcast and a ring
 * sendrecv, checked chunk by chunk on every rank so the host needs no second copy. */
#include <stdint.h>

#include "test_util.h"

#define N     (((size_t)1 << 31) + 5)
#define CHUNK ((size_t)64 << 20)

static uint8_t pattern(size_t i, int seed) { return (uint8_t)((i * 7 + (size_t)seed * 13) & 0x3f); }

static void fill(void *dev, int seed, uint8_t *host) {
  for (size_t off = 0; off < N; off += CHUNK) {
    size_t len = N - off < CHUNK ? N - off : CHUNK;
    for (size_t i = 0; i < len; i++)
      host[i] = pattern(off + i, seed);
    t_put((char *)dev + off, host, len);
  }
}

/* want(i) = mult * pattern(i, seed) mod 256; reports the first wrong element. */
static void check(const char *what, const void *dev, int seed, int mult, uint8_t *host) {
  for (size_t off = 0; off < N; off += CHUNK) {
    size_t len = N - off < CHUNK ? N - off : CHUNK;
    t_get(host, (const char *)dev + off, len);
    for (size_t i = 0; i < len; i++) {
      uint8_t want = (uint8_t)(mult * pattern(off + i, seed));
      if (host[i] != want) {
        T_FAIL_("%s: element %zu of %zu: got %u, want %u", what, off + i, N, host[i], want);
        return;
      }
    }
  }
}

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank, size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  uint8_t *host = t_host(CHUNK);
  void *a = t_alloc(N), *b = t_alloc(N);

  fill(a, 1, host); /* every rank the same input: the sum is size times it */
  T_OK(gmpi_allreduce(a, a, N, GMPI_INT8, GMPI_SUM, comm));
  check("allreduce in place", a, 1, size, host);

  fill(a, rank == size - 1 ? 2 : 3, host);
  T_OK(gmpi_bcast(a, N, GMPI_UINT8, size - 1, comm));
  check("bcast from the last rank", a, 2, 1, host);

  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  fill(a, 10 + rank, host);
  gmpi_msg_status_t st;
  T_OK(gmpi_sendrecv(a, N, GMPI_BYTE, next, 1, b, N, GMPI_BYTE, prev, 1, comm, &st));
  T_EQ_SIZE(st.count, N);
  check("sendrecv ring", b, 10 + prev, 1, host);

  t_free(a);
  t_free(b);
  free(host);
  return t_finish("large counts");
}
