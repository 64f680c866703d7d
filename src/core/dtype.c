/* SPDX-License-Identifier: BSD-3-Clause */
#include "dtype.h"

const gmpi_dtype_info_t gmpi_dtype_table[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = {"int8", 1, GMPI_CLASS_INT},
    [GMPI_UINT8] = {"uint8", 1, GMPI_CLASS_INT},
    [GMPI_INT16] = {"int16", 2, GMPI_CLASS_INT},
    [GMPI_UINT16] = {"uint16", 2, GMPI_CLASS_INT},
    [GMPI_INT32] = {"int32", 4, GMPI_CLASS_INT},
    [GMPI_UINT32] = {"uint32", 4, GMPI_CLASS_INT},
    [GMPI_INT64] = {"int64", 8, GMPI_CLASS_INT},
    [GMPI_UINT64] = {"uint64", 8, GMPI_CLASS_INT},
    [GMPI_FLOAT16] = {"float16", 2, GMPI_CLASS_FLOAT},
    [GMPI_BFLOAT16] = {"bfloat16", 2, GMPI_CLASS_FLOAT},
    [GMPI_FLOAT32] = {"float32", 4, GMPI_CLASS_FLOAT},
    [GMPI_FLOAT64] = {"float64", 8, GMPI_CLASS_FLOAT},
    [GMPI_COMPLEX64] = {"complex64", 8, GMPI_CLASS_COMPLEX},
    [GMPI_COMPLEX128] = {"complex128", 16, GMPI_CLASS_COMPLEX},
    [GMPI_BOOL] = {"bool", 1, GMPI_CLASS_BOOL},
    [GMPI_BYTE] = {"byte", 1, GMPI_CLASS_BYTE},
};

#define ARITHMETIC (GMPI_CLASS_INT | GMPI_CLASS_FLOAT | GMPI_CLASS_COMPLEX)
#define ORDERED    (GMPI_CLASS_INT | GMPI_CLASS_FLOAT)
#define BITWISE    (GMPI_CLASS_INT | GMPI_CLASS_BYTE)
#define LOGICAL    (GMPI_CLASS_INT | GMPI_CLASS_BOOL)

const gmpi_op_info_t gmpi_op_table[GMPI_OP_COUNT] = {
    [GMPI_SUM] = {"sum", ARITHMETIC}, [GMPI_PROD] = {"prod", ARITHMETIC},
    [GMPI_MIN] = {"min", ORDERED},    [GMPI_MAX] = {"max", ORDERED},
    [GMPI_AVG] = {"avg", ORDERED},    [GMPI_BAND] = {"band", BITWISE},
    [GMPI_BOR] = {"bor", BITWISE},    [GMPI_BXOR] = {"bxor", BITWISE},
    [GMPI_LAND] = {"land", LOGICAL},  [GMPI_LOR] = {"lor", LOGICAL},
    [GMPI_LXOR] = {"lxor", LOGICAL},
};

size_t gmpi_dtype_size(gmpi_dtype_t dtype) {
  return gmpi_dtype_in_range(dtype) ? gmpi_dtype_table[dtype].size : 0;
}

const char *gmpi_dtype_name(gmpi_dtype_t dtype) {
  return gmpi_dtype_in_range(dtype) ? gmpi_dtype_table[dtype].name : "invalid";
}

const char *gmpi_op_name(gmpi_op_t op) {
  return gmpi_op_in_range(op) ? gmpi_op_table[op].name : "invalid";
}

int gmpi_op_valid(gmpi_dtype_t dtype, gmpi_op_t op) { return gmpi_op_applies(dtype, op); }
