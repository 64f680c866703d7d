/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernels that must exist: reducing gathered inputs for the (dtype, op) pairs NCCL lacks
 * (16-bit integers, bool, byte, bitwise and logical ops, complex product...), the division
 * that finishes an average after NCCL's sum (C's truncation for integers), and the packing of a
 * plan's fused runs (cuda_pack.h). 16-bit floats compute in
 * float32; integer sums and products wrap (unsigned arithmetic), as MPI's do. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "cuda_pack.h"
#include "gmpi.h"

namespace {

template <typename T> struct Traits {
  typedef T acc;
  __device__ static acc load(T v) { return v; }
  __device__ static T store(acc v) { return v; }
};
template <> struct Traits<__half> {
  typedef float acc;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <> struct Traits<__nv_bfloat16> {
  typedef float acc;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

/* Integers wrap through their unsigned type; everything else computes as itself. */
template <typename A> __device__ A wrap_add(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    typedef typename std::make_unsigned<A>::type U;
    return (A)((U)a + (U)b);
  } else {
    return a + b;
  }
}
template <typename A> __device__ A wrap_mul(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    typedef typename std::make_unsigned<A>::type U;
    return (A)((U)a * (U)b);
  } else {
    return a * b;
  }
}

struct OpSum {
  template <typename A> __device__ A operator()(A a, A b) const { return wrap_add(a, b); }
  __device__ float2 operator()(float2 a, float2 b) const {
    return make_float2(a.x + b.x, a.y + b.y);
  }
  __device__ double2 operator()(double2 a, double2 b) const {
    return make_double2(a.x + b.x, a.y + b.y);
  }
};
struct OpProd {
  template <typename A> __device__ A operator()(A a, A b) const { return wrap_mul(a, b); }
  __device__ float2 operator()(float2 a, float2 b) const {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
  __device__ double2 operator()(double2 a, double2 b) const {
    return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
};
struct OpMin {
  template <typename A> __device__ A operator()(A a, A b) const { return b < a ? b : a; }
};
struct OpMax {
  template <typename A> __device__ A operator()(A a, A b) const { return b > a ? b : a; }
};
struct OpBand {
  template <typename A> __device__ A operator()(A a, A b) const { return a & b; }
};
struct OpBor {
  template <typename A> __device__ A operator()(A a, A b) const { return a | b; }
};
struct OpBxor {
  template <typename A> __device__ A operator()(A a, A b) const { return a ^ b; }
};
struct OpLand {
  template <typename A> __device__ A operator()(A a, A b) const { return (A)(a && b); }
};
struct OpLor {
  template <typename A> __device__ A operator()(A a, A b) const { return (A)(a || b); }
};
struct OpLxor {
  template <typename A> __device__ A operator()(A a, A b) const { return (A)(!a != !b); }
};

/* n stays an int: (A)n would wrap 128 ranks to -128 for int8 and 256 to 0 for uint8. */
template <typename A> __device__ A divide_by(A v, int n) {
  if constexpr (std::is_integral<A>::value)
    return (A)(v / n); /* C truncation (an unsigned v takes n as unsigned, n > 0) */
  else
    return v / (A)n;
}
__device__ float2 divide_by(float2 v, int n) { return make_float2(v.x / n, v.y / n); }
__device__ double2 divide_by(double2 v, int n) { return make_double2(v.x / n, v.y / n); }

template <typename T, typename Op>
__global__ void reduce_ranks_kernel(const T *in, T *out, size_t count, int nranks, int divide,
                                    Op op) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    typename Traits<T>::acc acc = Traits<T>::load(in[i]);
    for (int r = 1; r < nranks; r++)
      acc = op(acc, Traits<T>::load(in[(size_t)r * count + i]));
    if (divide) acc = divide_by(acc, nranks);
    out[i] = Traits<T>::store(acc);
  }
}

/* 16-bit floats divide in float32 and round once, as the cpu backend's gmpi_host_divide. */
template <typename T> __global__ void divide_kernel(T *buf, size_t count, int divisor) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    buf[i] = Traits<T>::store(divide_by(Traits<T>::load(buf[i]), divisor));
}

unsigned grid_for(size_t count) {
  size_t blocks = (count + 255) / 256;
  return (unsigned)(blocks > 4096 ? 4096 : blocks ? blocks : 1);
}

template <typename T, typename Op>
cudaError_t launch(Op op, const void *in, void *out, size_t count, int nranks, int divide,
                   cudaStream_t s) {
  reduce_ranks_kernel<T, Op>
      <<<grid_for(count), 256, 0, s>>>((const T *)in, (T *)out, count, nranks, divide, op);
  return cudaGetLastError();
}

#define ARGS in, out, count, nranks, divide, s
#define PARAMS                                                                                     \
  int op, const void *in, void *out, size_t count, int nranks, int divide, cudaStream_t s

/* One family of ops each; cudaErrorNotSupported when op is not in the family. */
template <typename T> cudaError_t arith_ops(PARAMS) {
  if (op == GMPI_SUM || op == GMPI_AVG) return launch<T>(OpSum(), ARGS);
  if (op == GMPI_PROD) return launch<T>(OpProd(), ARGS);
  return cudaErrorNotSupported;
}
template <typename T> cudaError_t order_ops(PARAMS) {
  if (op == GMPI_MIN) return launch<T>(OpMin(), ARGS);
  if (op == GMPI_MAX) return launch<T>(OpMax(), ARGS);
  return cudaErrorNotSupported;
}
template <typename T> cudaError_t bit_ops(PARAMS) {
  if (op == GMPI_BAND) return launch<T>(OpBand(), ARGS);
  if (op == GMPI_BOR) return launch<T>(OpBor(), ARGS);
  if (op == GMPI_BXOR) return launch<T>(OpBxor(), ARGS);
  return cudaErrorNotSupported;
}
template <typename T> cudaError_t logic_ops(PARAMS) {
  if (op == GMPI_LAND) return launch<T>(OpLand(), ARGS);
  if (op == GMPI_LOR) return launch<T>(OpLor(), ARGS);
  if (op == GMPI_LXOR) return launch<T>(OpLxor(), ARGS);
  return cudaErrorNotSupported;
}

/* Integers take every family, floating types arithmetic and ordering. */
template <typename T> cudaError_t int_ops(PARAMS) {
  cudaError_t e = arith_ops<T>(op, ARGS);
  if (e == cudaErrorNotSupported) e = order_ops<T>(op, ARGS);
  if (e == cudaErrorNotSupported) e = bit_ops<T>(op, ARGS);
  if (e == cudaErrorNotSupported) e = logic_ops<T>(op, ARGS);
  return e;
}
template <typename T> cudaError_t float_ops(PARAMS) {
  cudaError_t e = arith_ops<T>(op, ARGS);
  return e == cudaErrorNotSupported ? order_ops<T>(op, ARGS) : e;
}

template <typename T> cudaError_t launch_divide(void *buf, size_t count, int d, cudaStream_t s) {
  divide_kernel<T><<<grid_for(count), 256, 0, s>>>((T *)buf, count, d);
  return cudaGetLastError();
}

/* This block's share of bytes from -> to, in units of V (the caller checked the alignment). */
template <typename V> __device__ void copy_as(const char *from, char *to, size_t bytes) {
  const V *f = (const V *)from;
  V *t = (V *)to;
  size_t n = bytes / sizeof(V), stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    t[i] = f[i];
}

/* Slice blockIdx.y, row blockIdx.z, in the widest unit its two addresses and length allow; nothing
 * where the slice has no input (packing) or no output (unpacking). */
__global__ void pack_kernel(const gmpi_cuda_slice_t *slices, gmpi_cuda_rows_t r, char *packed,
                            int unpack) {
  gmpi_cuda_slice_t s = slices[blockIdx.y];
  if (!(unpack ? s.out : s.in)) return;
  size_t k = blockIdx.z, user = r.rows > 1 ? k * s.bytes : 0;
  char *at = packed + ((size_t)r.row + k) * r.row_bytes + s.offset;
  const char *from = unpack ? at : (const char *)s.in + user;
  char *to = unpack ? (char *)s.out + user : at;
  uintptr_t align = (uintptr_t)from | (uintptr_t)to | (uintptr_t)s.bytes;
  if (align % sizeof(uint4) == 0)
    copy_as<uint4>(from, to, s.bytes);
  else if (align % sizeof(uint32_t) == 0)
    copy_as<uint32_t>(from, to, s.bytes);
  else
    copy_as<uint8_t>(from, to, s.bytes);
}

} // namespace

extern "C" cudaError_t gmpi_cuda_reduce_ranks(int dtype, int op, const void *in, void *out,
                                              size_t count, int nranks, int divide,
                                              cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
  case GMPI_INT8: return int_ops<int8_t>(op, ARGS);
  case GMPI_UINT8: return int_ops<uint8_t>(op, ARGS);
  case GMPI_INT16: return int_ops<int16_t>(op, ARGS);
  case GMPI_UINT16: return int_ops<uint16_t>(op, ARGS);
  case GMPI_INT32: return int_ops<int32_t>(op, ARGS);
  case GMPI_UINT32: return int_ops<uint32_t>(op, ARGS);
  case GMPI_INT64: return int_ops<int64_t>(op, ARGS);
  case GMPI_UINT64: return int_ops<uint64_t>(op, ARGS);
  case GMPI_FLOAT16: return float_ops<__half>(op, ARGS);
  case GMPI_BFLOAT16: return float_ops<__nv_bfloat16>(op, ARGS);
  case GMPI_FLOAT32: return float_ops<float>(op, ARGS);
  case GMPI_FLOAT64: return float_ops<double>(op, ARGS);
  case GMPI_COMPLEX64: return arith_ops<float2>(op, ARGS);
  case GMPI_COMPLEX128: return arith_ops<double2>(op, ARGS);
  case GMPI_BOOL: return logic_ops<uint8_t>(op, ARGS);
  case GMPI_BYTE: return bit_ops<uint8_t>(op, ARGS);
  }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t gmpi_cuda_divide(int dtype, void *buf, size_t count, int divisor,
                                        cudaStream_t s) {
  if (count == 0 || divisor == 1) return cudaSuccess;
  switch (dtype) {
  case GMPI_INT8: return launch_divide<int8_t>(buf, count, divisor, s);
  case GMPI_UINT8: return launch_divide<uint8_t>(buf, count, divisor, s);
  case GMPI_INT16: return launch_divide<int16_t>(buf, count, divisor, s);
  case GMPI_UINT16: return launch_divide<uint16_t>(buf, count, divisor, s);
  case GMPI_INT32: return launch_divide<int32_t>(buf, count, divisor, s);
  case GMPI_UINT32: return launch_divide<uint32_t>(buf, count, divisor, s);
  case GMPI_INT64: return launch_divide<int64_t>(buf, count, divisor, s);
  case GMPI_UINT64: return launch_divide<uint64_t>(buf, count, divisor, s);
  case GMPI_FLOAT16: return launch_divide<__half>(buf, count, divisor, s);
  case GMPI_BFLOAT16: return launch_divide<__nv_bfloat16>(buf, count, divisor, s);
  case GMPI_FLOAT32: return launch_divide<float>(buf, count, divisor, s);
  case GMPI_FLOAT64: return launch_divide<double>(buf, count, divisor, s);
  case GMPI_COMPLEX64: return launch_divide<float2>(buf, count, divisor, s);
  case GMPI_COMPLEX128: return launch_divide<double2>(buf, count, divisor, s);
  }
  return cudaErrorInvalidValue;
}

extern "C" cudaError_t gmpi_cuda_pack(const gmpi_cuda_slice_t *slices, int n, gmpi_cuda_rows_t rows,
                                      size_t largest, void *packed, int unpack, cudaStream_t s) {
  if (n <= 0 || rows.rows <= 0) return cudaSuccess;
  if (n > GMPI_CUDA_PACK_MAX_SLICES || rows.rows > GMPI_CUDA_PACK_MAX_ROWS)
    return cudaErrorInvalidValue;
  /* 256 threads of 16 bytes per block and round; more blocks than 64 per slice gain nothing
   * at the sizes core fuses (at most 256 KiB a collective) */
  size_t blocks = (largest + 4095) / 4096;
  dim3 grid((unsigned)(blocks > 64 ? 64 : blocks ? blocks : 1), (unsigned)n, (unsigned)rows.rows);
  pack_kernel<<<grid, 256, 0, s>>>(slices, rows, (char *)packed, unpack);
  return cudaGetLastError();
}
