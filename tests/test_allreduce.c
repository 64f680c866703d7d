/* SPDX-License-Identifier: BSD-3-Clause */
/* Allreduce: every valid (dtype, op) pair, in place and out of place, at counts 0, 1, 7 and
 * 1 Mi elements, checked element by element on every rank; every invalid pair rejected; 8- and
 * 16-bit integer arithmetic wraps at every count. */
#include "test_values.h"

static const size_t counts[] = {0, 1, 7, (size_t)1 << 20};

static void check_pair(gmpi_comm_t comm, int rank, int size, gmpi_dtype_t d, gmpi_op_t op,
                       size_t count, int in_place) {
  size_t bytes = count * gmpi_dtype_size(d);
  char *in = t_host(bytes), *want = t_host(bytes), *got = t_host(bytes);
  T_TILE(d, in, count, t_input(d, op, rank, i));
  T_TILE(d, want, count, t_reduced(d, op, size, i));
  void *send = t_alloc(bytes), *recv = in_place ? send : t_alloc(bytes);
  t_put(send, in, bytes);
  T_OK(gmpi_allreduce(send, recv, count, d, op, comm));
  t_get(got, recv, bytes);
  char what[96];
  snprintf(what, sizeof(what), "allreduce %s count %zu %s", gmpi_op_name(op), count,
           in_place ? "in place" : "out of place");
  t_check_buffer(what, d, got, want, count);
  if (!in_place) { /* the input must be left alone */
    t_get(got, send, bytes);
    t_check_buffer("allreduce sendbuf unchanged", d, got, in, count);
    t_free(recv);
  }
  t_free(send);
  free(in);
  free(want);
  free(got);
}

static void check_invalid(gmpi_comm_t comm, gmpi_dtype_t d, gmpi_op_t op) {
  char buf[64] = {0}, out[64];
  T_STATUS(gmpi_allreduce(buf, out, 1, d, op, comm), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS(gmpi_op_name(op));
  T_ERROR_MENTIONS(gmpi_dtype_name(d));
}

/* 8- and 16-bit integer sums, averages and products overflow and must wrap, as C's unsigned
 * arithmetic does, at every count: Open MPI's vector kernels saturate from about 1000 elements
 * on (open-mpi/ompi#8045), so short vectors alone prove nothing. */
static const gmpi_dtype_t narrow[] = {GMPI_INT8, GMPI_UINT8, GMPI_INT16, GMPI_UINT16};
static const gmpi_op_t wrapping[] = {GMPI_SUM, GMPI_AVG, GMPI_PROD};

/* Rank r's element: large enough that two of them overflow the type. */
static uint64_t narrow_input(gmpi_dtype_t d, int r, size_t i) {
  uint64_t top = gmpi_dtype_size(d) == 1 ? 0x7f : 0x7fff;
  return top - (uint64_t)((r * 3 + (int)i) % 5);
}

/* The wrapped result, as the type's bits. AVG: the wrapped sum divided as C divides the type. */
static uint64_t narrow_want(gmpi_dtype_t d, gmpi_op_t op, int size, size_t i) {
  uint64_t mask = gmpi_dtype_size(d) == 1 ? 0xff : 0xffff, acc = op == GMPI_PROD ? 1 : 0;
  for (int r = 0; r < size; r++)
    acc = (op == GMPI_PROD ? acc * narrow_input(d, r, i) : acc + narrow_input(d, r, i)) & mask;
  if (op != GMPI_AVG) return acc;
  int is_signed = d == GMPI_INT8 || d == GMPI_INT16;
  int64_t v = is_signed ? (int64_t)(acc > mask / 2 ? acc - mask - 1 : acc) : (int64_t)acc;
  return (uint64_t)(v / size) & mask;
}

static void check_wrap(gmpi_comm_t comm, int rank, int size, gmpi_dtype_t d, gmpi_op_t op,
                       size_t count) {
  size_t es = gmpi_dtype_size(d), bytes = count * es;
  unsigned char *in = t_host(bytes), *got = t_host(bytes);
  for (size_t i = 0; i < count; i++) {
    uint64_t v = narrow_input(d, rank, i);
    memcpy(in + i * es, &v, es); /* little-endian: the low bytes */
  }
  void *send = t_alloc(bytes), *recv = t_alloc(bytes);
  t_put(send, in, bytes);
  T_OK(gmpi_allreduce(send, recv, count, d, op, comm));
  t_get(got, recv, bytes);
  for (size_t i = 0; i < count; i++) {
    uint64_t v = 0, want = narrow_want(d, op, size, i);
    memcpy(&v, got + i * es, es);
    if (v == want) continue;
    T_FAIL_("allreduce %s %s count %zu: element %zu is 0x%llx, want 0x%llx (wrapped)",
            gmpi_dtype_name(d), gmpi_op_name(op), count, i, (unsigned long long)v,
            (unsigned long long)want);
    break;
  }
  t_free(send);
  t_free(recv);
  free(in);
  free(got);
}

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank, size, pairs = 0, invalid = 0;
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++) {
    for (int op = 0; op < GMPI_OP_COUNT; op++) {
      if (!gmpi_op_valid((gmpi_dtype_t)d, (gmpi_op_t)op)) {
        check_invalid(comm, (gmpi_dtype_t)d, (gmpi_op_t)op);
        invalid++;
        continue;
      }
      pairs++;
      for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int in_place = 0; in_place < 2; in_place++)
          check_pair(comm, rank, size, (gmpi_dtype_t)d, (gmpi_op_t)op, counts[c], in_place);
    }
  }
  const size_t wrap_counts[] = {7, 1000, 4099, 100000};
  for (size_t d = 0; d < sizeof(narrow) / sizeof(narrow[0]); d++)
    for (size_t o = 0; o < sizeof(wrapping) / sizeof(wrapping[0]); o++)
      for (size_t c = 0; c < sizeof(wrap_counts) / sizeof(wrap_counts[0]); c++)
        check_wrap(comm, rank, size, narrow[d], wrapping[o], wrap_counts[c]);
  /* MPI's rules, counted: 8 integer types x 11 ops, 4 floating x 5, 2 complex x 2, bool x 3,
   * byte x 3. */
  T_EQ_INT(pairs, 8 * 11 + 4 * 5 + 2 * 2 + 3 + 3);
  T_EQ_INT(invalid, GMPI_DTYPE_COUNT * GMPI_OP_COUNT - pairs);
  return t_finish("allreduce");
}
