/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI's predefined types and ops as gmpi's: one table per fact. MPI's handles are link-time
 * addresses (Open MPI) or constants (MPICH), so the tables are lists searched in order, the
 * common types first. */
#include <limits.h>
#include <stdint.h>

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

static const struct {
  MPI_Datatype mpi;
  gmpi_dtype_t g;
} type_table[] = {
    {MPI_FLOAT, GMPI_FLOAT32},
    {MPI_DOUBLE, GMPI_FLOAT64},
    {MPI_INT, SIGNED_OF(int)},
    {MPI_BYTE, GMPI_BYTE},
    {MPI_CHAR, GMPI_INT8},
    {MPI_SIGNED_CHAR, GMPI_INT8},
    {MPI_UNSIGNED_CHAR, GMPI_UINT8},
    {MPI_SHORT, SIGNED_OF(short)},
    {MPI_UNSIGNED_SHORT, UNSIGNED_OF(unsigned short)},
    {MPI_UNSIGNED, UNSIGNED_OF(unsigned)},
    {MPI_LONG, SIGNED_OF(long)},
    {MPI_UNSIGNED_LONG, UNSIGNED_OF(unsigned long)},
    {MPI_LONG_LONG, SIGNED_OF(long long)},
    {MPI_LONG_LONG_INT, SIGNED_OF(long long)},
    {MPI_UNSIGNED_LONG_LONG, UNSIGNED_OF(unsigned long long)},
    {MPI_INT8_T, GMPI_INT8},
    {MPI_INT16_T, GMPI_INT16},
    {MPI_INT32_T, GMPI_INT32},
    {MPI_INT64_T, GMPI_INT64},
    {MPI_UINT8_T, GMPI_UINT8},
    {MPI_UINT16_T, GMPI_UINT16},
    {MPI_UINT32_T, GMPI_UINT32},
    {MPI_UINT64_T, GMPI_UINT64},
    {MPI_AINT, SIGNED_OF(MPI_Aint)},
    {MPI_OFFSET, SIGNED_OF(MPI_Offset)},
    {MPI_COUNT, SIGNED_OF(MPI_Count)},
    {MPI_C_BOOL, GMPI_BOOL},
    {MPI_C_FLOAT_COMPLEX, GMPI_COMPLEX64},
    {MPI_C_COMPLEX, GMPI_COMPLEX64},
    {MPI_C_DOUBLE_COMPLEX, GMPI_COMPLEX128},
};

static const struct {
  MPI_Op mpi;
  gmpi_op_t g;
} op_table[] = {
    {MPI_SUM, GMPI_SUM},   {MPI_MAX, GMPI_MAX},   {MPI_MIN, GMPI_MIN},   {MPI_PROD, GMPI_PROD},
    {MPI_BAND, GMPI_BAND}, {MPI_BOR, GMPI_BOR},   {MPI_BXOR, GMPI_BXOR}, {MPI_LAND, GMPI_LAND},
    {MPI_LOR, GMPI_LOR},   {MPI_LXOR, GMPI_LXOR},
};

int dropin_dtype(MPI_Datatype type, gmpi_dtype_t *dtype) {
  for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++) {
    if (type_table[i].mpi == type) {
      *dtype = type_table[i].g;
      return 1;
    }
  }
  return 0;
}

int dropin_op(MPI_Op op, gmpi_op_t *gop) {
  for (size_t i = 0; i < sizeof(op_table) / sizeof(op_table[0]); i++) {
    if (op_table[i].mpi == op) {
      *gop = op_table[i].g;
      return 1;
    }
  }
  return 0;
}

int dropin_contiguous(MPI_Datatype type, size_t *size) {
  gmpi_dtype_t g;
  if (dropin_dtype(type, &g)) {
    *size = gmpi_dtype_size(g);
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
