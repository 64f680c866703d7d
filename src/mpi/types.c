/* SPDX-License-Identifier: BSD-3-Clause */
#include "types.h"

#include <limits.h>
#include <pthread.h>

#include "../core/reduce.h"
#include "mpi_check.h"

const MPI_Datatype gmpi_mpi_dtype_map[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = MPI_INT8_T,
    [GMPI_UINT8] = MPI_UINT8_T,
    [GMPI_INT16] = MPI_INT16_T,
    [GMPI_UINT16] = MPI_UINT16_T,
    [GMPI_INT32] = MPI_INT32_T,
    [GMPI_UINT32] = MPI_UINT32_T,
    [GMPI_INT64] = MPI_INT64_T,
    [GMPI_UINT64] = MPI_UINT64_T,
    [GMPI_FLOAT16] = MPI_UINT16_T,
    [GMPI_BFLOAT16] = MPI_UINT16_T,
    [GMPI_FLOAT32] = MPI_FLOAT,
    [GMPI_FLOAT64] = MPI_DOUBLE,
    [GMPI_COMPLEX64] = MPI_C_FLOAT_COMPLEX,
    [GMPI_COMPLEX128] = MPI_C_DOUBLE_COMPLEX,
    /* bool as a C integer: MPI's logical ops on it yield 0/1 whatever non-zero came in. */
    [GMPI_BOOL] = MPI_UINT8_T,
    [GMPI_BYTE] = MPI_BYTE,
};

static const MPI_Op op_map[GMPI_OP_COUNT] = {
    [GMPI_SUM] = MPI_SUM,   [GMPI_PROD] = MPI_PROD, [GMPI_MIN] = MPI_MIN,   [GMPI_MAX] = MPI_MAX,
    [GMPI_AVG] = MPI_SUM,   [GMPI_BAND] = MPI_BAND, [GMPI_BOR] = MPI_BOR,   [GMPI_BXOR] = MPI_BXOR,
    [GMPI_LAND] = MPI_LAND, [GMPI_LOR] = MPI_LOR,   [GMPI_LXOR] = MPI_LXOR,
};

/* ---- gmpi's own ops: one MPI user function per (dtype, op) where MPI's will not do ------
 * The 16-bit floats: MPI has no such types. The 8- and 16-bit integers' sum and product: Open
 * MPI's AVX kernels saturate them (100 + 100 = 127 in int8 from about 1000 elements on,
 * open-mpi/ompi#8045) while shorter vectors wrap; gmpi wraps at every count, as C's unsigned
 * arithmetic does and the cuda backend does. */
#define OWN_OP_FN(tn, dtype, on, op)                                                               \
  static void mpi_##tn##_##on(void *in, void *inout, int *len, MPI_Datatype *type) {               \
    (void)type;                                                                                    \
    gmpi_host_reduce(dtype, op, inout, in, (size_t)*len);                                          \
  }
#define ARITH_OP_FNS(tn, dtype)                                                                    \
  OWN_OP_FN(tn, dtype, sum, GMPI_SUM) OWN_OP_FN(tn, dtype, prod, GMPI_PROD)
#define HALF_OP_FNS(tn, dtype)                                                                     \
  ARITH_OP_FNS(tn, dtype) OWN_OP_FN(tn, dtype, min, GMPI_MIN) OWN_OP_FN(tn, dtype, max, GMPI_MAX)
HALF_OP_FNS(f16, GMPI_FLOAT16)
HALF_OP_FNS(bf16, GMPI_BFLOAT16)
ARITH_OP_FNS(i8, GMPI_INT8)
ARITH_OP_FNS(u8, GMPI_UINT8)
ARITH_OP_FNS(i16, GMPI_INT16)
ARITH_OP_FNS(u16, GMPI_UINT16)

/* AVG is a sum (the caller divides). */
#define ARITH_ROW(tn)                                                                              \
  [GMPI_SUM] = mpi_##tn##_sum, [GMPI_PROD] = mpi_##tn##_prod, [GMPI_AVG] = mpi_##tn##_sum
#define HALF_ROW(tn)                                                                               \
  { ARITH_ROW(tn), [GMPI_MIN] = mpi_##tn##_min, [GMPI_MAX] = mpi_##tn##_max }
static MPI_User_function *const own_fns[GMPI_DTYPE_COUNT][GMPI_OP_COUNT] = {
    [GMPI_FLOAT16] = HALF_ROW(f16),  [GMPI_BFLOAT16] = HALF_ROW(bf16),
    [GMPI_INT8] = {ARITH_ROW(i8)},   [GMPI_UINT8] = {ARITH_ROW(u8)},
    [GMPI_INT16] = {ARITH_ROW(i16)}, [GMPI_UINT16] = {ARITH_ROW(u16)}};

static pthread_mutex_t ops_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Op own_ops[GMPI_DTYPE_COUNT][GMPI_OP_COUNT];
static int ops_users;
MPI_Op gmpi_mpi_op_map[GMPI_DTYPE_COUNT][GMPI_OP_COUNT];

gmpi_status_t gmpi_mpi_ops_acquire(void) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&ops_lock);
  if (ops_users++ == 0) {
    for (int d = 0; d < GMPI_DTYPE_COUNT; d++)
      for (int o = 0; o < GMPI_OP_COUNT; o++) {
        own_ops[d][o] = MPI_OP_NULL;
        if (own_fns[d][o] && st == GMPI_SUCCESS)
          GMPI_MPI_CHECK_GOTO(PMPI_Op_create(own_fns[d][o], 1, &own_ops[d][o]), st, unlock);
        gmpi_mpi_op_map[d][o] = own_fns[d][o] ? own_ops[d][o] : op_map[o];
      }
  }
unlock:
  pthread_mutex_unlock(&ops_lock);
  return st;
}

void gmpi_mpi_ops_release(void) {
  pthread_mutex_lock(&ops_lock);
  if (--ops_users == 0) {
    for (int d = 0; d < GMPI_DTYPE_COUNT; d++)
      for (int o = 0; o < GMPI_OP_COUNT; o++)
        if (own_ops[d][o] != MPI_OP_NULL) PMPI_Op_free(&own_ops[d][o]);
  }
  pthread_mutex_unlock(&ops_lock);
}

/* ---- byte counts beyond one MPI count ---------------------------------------------- */
gmpi_status_t gmpi_mpi_bytes_type_made(size_t bytes, size_t limit, MPI_Datatype *type, int *count) {
  /* only for bytes > min(limit, INT_MAX): gmpi_mpi_bytes_type answers the rest inline */
  if (limit > INT_MAX) limit = INT_MAX;
  /* q blocks of `block` bytes, then r bytes: a struct whose type signature is plain bytes,
   * so any receive of enough bytes matches it, and whose extent is exactly `bytes`. */
  size_t block = limit;
  while (bytes / block > INT_MAX)
    block *= 2;
  size_t q = bytes / block, r = bytes % block;
  MPI_Datatype blocks, whole;
  GMPI_MPI_CHECK(PMPI_Type_contiguous((int)block, MPI_BYTE, &blocks));
  int lens[2] = {(int)q, (int)r};
  MPI_Aint displs[2] = {0, (MPI_Aint)(q * block)};
  MPI_Datatype parts[2] = {blocks, MPI_BYTE};
  int rc = PMPI_Type_create_struct(r ? 2 : 1, lens, displs, parts, &whole);
  PMPI_Type_free(&blocks);
  if (rc != MPI_SUCCESS) return gmpi_mpi_error(rc, "MPI_Type_create_struct");
  GMPI_MPI_CHECK(PMPI_Type_commit(&whole));
  *type = whole;
  *count = 1;
  return GMPI_SUCCESS;
}
