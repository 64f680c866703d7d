/* Allreduce: every valid (dtype, op) pair, in place and out of place, at counts 0, 1, 7 and
 * 1 Mi elements, checked element by element on every rank; every invalid pair rejected. */
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
  /* MPI's rules, counted: 8 integer types x 11 ops, 4 floating x 5, 2 complex x 2, bool x 3,
   * byte x 3. */
  T_EQ_INT(pairs, 8 * 11 + 4 * 5 + 2 * 2 + 3 + 3);
  T_EQ_INT(invalid, GMPI_DTYPE_COUNT * GMPI_OP_COUNT - pairs);
  return t_finish("allreduce");
}
