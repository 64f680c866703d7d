/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI's predefined types and ops as gmpi's: one table per fact. MPI's handles are link-time
 * addresses (Open MPI) or constants (MPICH), so the tables are lists searched in order, the
 * common types first. */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "dropin.h"

/* gmpi's integer dtype of a C integer type, by its size. */
#define SIGNED_OF(t)                                                                               \
  (sizeof(t) == 1   ? GMPI_INT8                                                                    \
   : sizeof(t) == 2 ? GMPI_INT16                                                                   \
   : sizeof(t) == 4 ? GMPI_INT32                                                                   \
                    : GMPI_INT64)
#define UNSIGNED_OF(t)                                                                             \
  (sizeof(t) == 1   ? GMPI_UINT8                                                                   \
   : sizeof(t) == 2 ? GMPI_UINT16                                                                  \
   : sizeof(t) == 4 ? GMPI_UINT32                                                                  \
                    : GMPI_UINT64)

static dropin_type_row_t type_table[] = {
    {MPI_FLOAT, GMPI_FLOAT32, sizeof(float), 0},
    {MPI_DOUBLE, GMPI_FLOAT64, sizeof(double), 0},
    {MPI_INT, SIGNED_OF(int), sizeof(int), 0},
    {MPI_BYTE, GMPI_BYTE, sizeof(char), 0},
    {MPI_CHAR, GMPI_INT8, sizeof(char), 0},
    {MPI_SIGNED_CHAR, GMPI_INT8, sizeof(signed char), 0},
    {MPI_UNSIGNED_CHAR, GMPI_UINT8, sizeof(unsigned char), 0},
    {MPI_SHORT, SIGNED_OF(short), sizeof(short), 0},
    {MPI_UNSIGNED_SHORT, UNSIGNED_OF(unsigned short), sizeof(unsigned short), 0},
    {MPI_UNSIGNED, UNSIGNED_OF(unsigned), sizeof(unsigned), 0},
    {MPI_LONG, SIGNED_OF(long), sizeof(long), 0},
    {MPI_UNSIGNED_LONG, UNSIGNED_OF(unsigned long), sizeof(unsigned long), 0},
    {MPI_LONG_LONG, SIGNED_OF(long long), sizeof(long long), 0},
    {MPI_LONG_LONG_INT, SIGNED_OF(long long), sizeof(long long), 0},
    {MPI_UNSIGNED_LONG_LONG, UNSIGNED_OF(unsigned long long), sizeof(unsigned long long), 0},
    {MPI_INT8_T, GMPI_INT8, sizeof(int8_t), 0},
    {MPI_INT16_T, GMPI_INT16, sizeof(int16_t), 0},
    {MPI_INT32_T, GMPI_INT32, sizeof(int32_t), 0},
    {MPI_INT64_T, GMPI_INT64, sizeof(int64_t), 0},
    {MPI_UINT8_T, GMPI_UINT8, sizeof(uint8_t), 0},
    {MPI_UINT16_T, GMPI_UINT16, sizeof(uint16_t), 0},
    {MPI_UINT32_T, GMPI_UINT32, sizeof(uint32_t), 0},
    {MPI_UINT64_T, GMPI_UINT64, sizeof(uint64_t), 0},
    {MPI_AINT, SIGNED_OF(MPI_Aint), sizeof(MPI_Aint), 0},
    {MPI_OFFSET, SIGNED_OF(MPI_Offset), sizeof(MPI_Offset), 0},
    {MPI_COUNT, SIGNED_OF(MPI_Count), sizeof(MPI_Count), 0},
    {MPI_C_BOOL, GMPI_BOOL, sizeof(_Bool), 0},
    {MPI_C_FLOAT_COMPLEX, GMPI_COMPLEX64, sizeof(float _Complex), 0},
    {MPI_C_COMPLEX, GMPI_COMPLEX64, sizeof(float _Complex), 0},
    {MPI_C_DOUBLE_COMPLEX, GMPI_COMPLEX128, sizeof(double _Complex), 0},
};

static const dropin_op_row_t op_table[] = {
    {MPI_SUM, GMPI_SUM},   {MPI_MAX, GMPI_MAX},   {MPI_MIN, GMPI_MIN},   {MPI_PROD, GMPI_PROD},
    {MPI_BAND, GMPI_BAND}, {MPI_BOR, GMPI_BOR},   {MPI_BXOR, GMPI_BXOR}, {MPI_LAND, GMPI_LAND},
    {MPI_LOR, GMPI_LOR},   {MPI_LXOR, GMPI_LXOR},
};

#define N_TYPES (sizeof(type_table) / sizeof(type_table[0]))

void dropin_types_start(void) {
  _Static_assert(GMPI_OP_COUNT <= 32, "a row's ops are 32 bits");
  for (size_t i = 0; i < N_TYPES; i++) {
    type_table[i].ops = 0;
    for (int op = 0; op < GMPI_OP_COUNT; op++)
      if (gmpi_op_valid(type_table[i].g, (gmpi_op_t)op)) type_table[i].ops |= 1u << op;
  }
}

/* Every slot starts at a row (a NULL slot would need a test on every lookup). */
_Atomic(const dropin_type_row_t *) dropin_type_memo[DROPIN_TYPE_MEMO] = {
    &type_table[0], &type_table[0], &type_table[0], &type_table[0],
    &type_table[0], &type_table[0], &type_table[0], &type_table[0]};

/* type's row of type_table; N_TYPES when it has none. The memo is tried first, and learns the
 * row found (dropin_type_memo). */
static size_t type_row(MPI_Datatype type) {
  const dropin_type_row_t *known = dropin_memo_type(type);
  if (known) return (size_t)(known - type_table);
  size_t i = 0;
  while (i < N_TYPES && type_table[i].mpi != type)
    i++;
  if (i < N_TYPES)
    atomic_store_explicit(&dropin_type_memo[dropin_type_slot(type)], &type_table[i],
                          memory_order_relaxed);
  return i;
}

int dropin_dtype(MPI_Datatype type, gmpi_dtype_t *dtype) {
  size_t i = type_row(type);
  if (i == N_TYPES) return 0;
  *dtype = type_table[i].g;
  return 1;
}

_Atomic(const dropin_op_row_t *) dropin_last_op_row = &op_table[0];

int dropin_op_asked(MPI_Op op, gmpi_op_t *gop) {
  for (size_t i = 0; i < sizeof(op_table) / sizeof(op_table[0]); i++) {
    if (op_table[i].mpi == op) {
      atomic_store_explicit(&dropin_last_op_row, &op_table[i], memory_order_relaxed);
      *gop = op_table[i].g;
      return 1;
    }
  }
  return 0;
}

int dropin_contiguous(MPI_Datatype type, size_t *size) {
  size_t i = type_row(type); /* a predefined type: its size from the table (no call) */
  if (i < N_TYPES) {
    *size = type_table[i].size;
    return 1;
  }
  MPI_Count bytes = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_size_x(type, &bytes) != MPI_SUCCESS ||
      PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent_x(type, &tlb, &textent) != MPI_SUCCESS)
    return 0;
  *size = (size_t)bytes;
  return bytes > 0 && lb == 0 && tlb == 0 && extent == bytes && textent == bytes;
}

/* ---- types made but not committed ---------------------------------------------------------- */

/* MPI offers no query for "committed", so the layer keeps the types the program made through
 * its constructors and has not committed or freed yet. A type it did not see made (predefined,
 * from Fortran, returned by MPI_Type_get_contents) is taken as committed: the check can miss a
 * mistake but never refuses a usable type. The set is small (types wait here only between
 * their constructor and MPI_Type_commit), and calls are at most MPI_THREAD_SERIALIZED. */
static MPI_Datatype *uncommitted;
static size_t n_uncommitted, cap_uncommitted;

static int find_uncommitted(MPI_Datatype type, size_t *at) {
  for (size_t i = 0; i < n_uncommitted; i++)
    if (uncommitted[i] == type) {
      *at = i;
      return 1;
    }
  return 0;
}

static void forget_uncommitted(MPI_Datatype type) {
  size_t at = 0;
  if (!find_uncommitted(type, &at)) return;
  uncommitted[at] = uncommitted[--n_uncommitted];
  if (n_uncommitted == 0) { /* leave nothing for leak checkers */
    free(uncommitted);
    uncommitted = NULL;
    cap_uncommitted = 0;
  }
}

/* After a constructor: rc is its result; a new type is uncommitted (no memory to note it: the
 * type goes unchecked, as one made elsewhere). */
static int made(int rc, const MPI_Datatype *newtype) {
  if (rc != MPI_SUCCESS) return rc;
  forget_uncommitted(*newtype); /* a handle MPI reuses after a free this layer missed */
  if (n_uncommitted == cap_uncommitted) {
    size_t cap = cap_uncommitted ? 2 * cap_uncommitted : 16;
    MPI_Datatype *grown = realloc(uncommitted, cap * sizeof(*grown));
    if (!grown) return rc;
    uncommitted = grown;
    cap_uncommitted = cap;
  }
  uncommitted[n_uncommitted++] = *newtype;
  return rc;
}

int dropin_type_committed(MPI_Datatype type) {
  size_t at = 0;
  return !find_uncommitted(type, &at);
}

int MPI_Type_commit(MPI_Datatype *type) {
  int rc = PMPI_Type_commit(type);
  if (rc == MPI_SUCCESS) forget_uncommitted(*type);
  return rc;
}

int MPI_Type_free(MPI_Datatype *type) {
  MPI_Datatype t = type ? *type : MPI_DATATYPE_NULL;
  int rc = PMPI_Type_free(type);
  if (rc == MPI_SUCCESS) forget_uncommitted(t);
  return rc;
}

/* A duplicate is committed when its original is (MPI_Type_dup keeps the committed state). */
int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype) {
  size_t at = 0;
  int rc = PMPI_Type_dup(oldtype, newtype);
  if (rc == MPI_SUCCESS && !find_uncommitted(oldtype, &at)) return rc;
  return made(rc, newtype);
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_contiguous(count, oldtype, newtype), newtype);
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                    MPI_Datatype *newtype) {
  return made(PMPI_Type_vector(count, blocklength, stride, oldtype, newtype), newtype);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype) {
  return made(PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype), newtype);
}

int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
                     MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_indexed(count, blocklengths, displacements, oldtype, newtype), newtype);
}

int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
                             MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_create_hindexed(count, blocklengths, displacements, oldtype, newtype),
              newtype);
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
                                  MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_create_indexed_block(count, blocklength, displacements, oldtype, newtype),
              newtype);
}

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_create_hindexed_block(count, blocklength, displacements, oldtype, newtype),
              newtype);
}

int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
                           const MPI_Datatype types[], MPI_Datatype *newtype) {
  return made(PMPI_Type_create_struct(count, blocklengths, displacements, types, newtype), newtype);
}

int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                             int order, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return made(PMPI_Type_create_subarray(ndims, sizes, subsizes, starts, order, oldtype, newtype),
              newtype);
}

int MPI_Type_create_darray(int size, int rank, int ndims, const int gsizes[], const int distribs[],
                           const int dargs[], const int psizes[], int order, MPI_Datatype oldtype,
                           MPI_Datatype *newtype) {
  return made(PMPI_Type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order,
                                      oldtype, newtype),
              newtype);
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                            MPI_Datatype *newtype) {
  return made(PMPI_Type_create_resized(oldtype, lb, extent, newtype), newtype);
}
