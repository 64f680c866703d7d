/* SPDX-License-Identifier: BSD-3-Clause */
/* The helpers for bindings: every dtype and op name round-trips through its lookup, unknown
 * names fail naming the name, gmpi_init refuses NULL handles and a NULL result (no crash), and
 * gmpi_init_world gives a working comm on the world. */
#include "test_util.h"

static void names_round_trip(void) {
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++) {
    gmpi_dtype_t got = GMPI_DTYPE_COUNT;
    T_OK(gmpi_dtype_from_name(gmpi_dtype_name((gmpi_dtype_t)d), &got));
    T_EQ_INT(got, d);
  }
  for (int o = 0; o < GMPI_OP_COUNT; o++) {
    gmpi_op_t got = GMPI_OP_COUNT;
    T_OK(gmpi_op_from_name(gmpi_op_name((gmpi_op_t)o), &got));
    T_EQ_INT(got, o);
  }
}

static void bad_names(void) {
  gmpi_dtype_t d = GMPI_INT8;
  gmpi_op_t o = GMPI_SUM;
  T_STATUS(gmpi_dtype_from_name("float33", &d), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("float33");
  T_ERROR_MENTIONS("gmpi_dtype_from_name");
  T_EQ_INT(d, GMPI_INT8); /* out-parameter untouched on failure */
  T_STATUS(gmpi_dtype_from_name("invalid", &d), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_dtype_from_name("", &d), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_dtype_from_name(NULL, &d), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("name");
  T_STATUS(gmpi_dtype_from_name("int32", NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("dtype");
  T_STATUS(gmpi_op_from_name("Sum", &o), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("Sum");
  T_ERROR_MENTIONS("gmpi_op_from_name");
  T_EQ_INT(o, GMPI_SUM);
  T_STATUS(gmpi_op_from_name(NULL, &o), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_op_from_name("max", NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("op");
}

static void bad_inits(void) {
  gmpi_comm_t c = NULL;
  MPI_Comm zero;
  memset(&zero, 0, sizeof(zero));
  T_STATUS(gmpi_init(MPI_COMM_NULL, &c), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("mpi_comm");
  T_STATUS(gmpi_init(zero, &c), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("NULL handle");
  T_STATUS(gmpi_init(MPI_COMM_WORLD, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("comm");
  T_STATUS(gmpi_init_world(NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("gmpi_init_world");
  T_TRUE(c == NULL);
}

/* A comm from gmpi_init_world spans the world: rank, size and an allreduce agree with MPI's. */
static void world_comm(void) {
  int wrank = -1, wsize = 0, rank = -2, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  gmpi_comm_t w = NULL;
  T_OK(gmpi_init_world(&w));
  if (!w) return;
  T_OK(gmpi_comm_rank(w, &rank));
  T_OK(gmpi_comm_size(w, &size));
  T_EQ_INT(rank, wrank);
  T_EQ_INT(size, wsize);
  int64_t *v = t_alloc(sizeof(int64_t)), host = wrank + 1;
  t_put(v, &host, sizeof(host));
  T_OK(gmpi_allreduce(v, v, 1, GMPI_INT64, GMPI_SUM, w));
  t_get(&host, v, sizeof(host));
  T_EQ_INT(host, (int64_t)wsize * (wsize + 1) / 2);
  t_free(v);
  T_OK(gmpi_finalize(&w));
  T_TRUE(w == NULL);
}

int main(int argc, char **argv) {
  t_init(&argc, &argv);
  names_round_trip();
  bad_names();
  bad_inits();
  world_comm();
  return t_finish("lookup");
}
