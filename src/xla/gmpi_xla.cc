// SPDX-License-Identifier: BSD-3-Clause
// XLA FFI handlers for gmpi.jax: MPI calls inside jax.jit, run by gmpi. C++ only because XLA's
// FFI is a C++ API; everything here is a client of gmpi.h, like the drop-in layer.
//
// One handler, gmpi_xla_call, serves every call: its `kind` field says which, the other
// fields of its one attribute carry what the call needs (the gmpi comm's address, dtype, op, peers,
// tags, the request slot), and its operands are the call's input buffers then the ordering token,
// its results the output buffers then the token (python/gmpi/jax/_xla.py builds them). One handler
// keeps one argument decoder and one error path for every call.
//
// CPU: the buffers are host memory and gmpi runs its host engine on them, to completion.
// Nonblocking point to point (isend, irecv, wait) stages data in memory the handler owns: XLA
// may reuse an operand's buffer as soon as the call that read it returns, and a result's buffer
// must be final when its call returns, while MPI reads or writes until the wait. A request
// lives in a slot named at trace time (one per isend/irecv in the program), from its post to
// its wait.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#ifdef GMPI_XLA_CUDA
#include <cuda_runtime.h>
#endif

#include "gmpi.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The calls, as python/gmpi/jax/_xla.py numbers them.
enum Kind : int32_t {
  kAllreduce = 0,
  kBcast,
  kReduce,
  kAllgather,
  kAlltoall,
  kGather,
  kScatter,
  kBarrier,
  kSend,
  kRecv,
  kSendrecv,
  kIsend,
  kIrecv,
  kWait,
  kCopy, // no MPI: the output is a copy of the input (gmpi-jax-bench's floor, XLA's own cost)
  kKindCount
};

struct Call {
  int32_t kind;
  gmpi_comm_t comm;
  gmpi_dtype_t dtype;
  gmpi_op_t op;
  int64_t count; // elements of the call's main buffer
  int32_t root, peer, tag, peer2, tag2;
  MPI_Status *status; // an mpi4py status to fill, or NULL
  int64_t slot;
};

// A posted isend or irecv, from its post to its wait.
struct Pending {
  gmpi_request_t request = nullptr;
  void *stage = nullptr; // the data MPI reads (send) or writes (receive)
  size_t bytes = 0;
  bool is_recv = false;
};

std::mutex pending_lock;
std::unordered_map<int64_t, Pending> pending;

// Where a call's buffers live: host memory (the cpu platform), or device memory ordered on the
// stream XLA hands the call (the CUDA platform, built with GMPI_XLA_CUDA), where gmpi runs in
// stream-ordered mode on that stream.
struct Memory {
  void *stream; // NULL: host memory
};

void *Alloc(const Memory &m, size_t bytes) {
#ifdef GMPI_XLA_CUDA
  if (m.stream) {
    void *p = nullptr;
    return cudaMallocAsync(&p, bytes ? bytes : 1, (cudaStream_t)m.stream) == cudaSuccess ? p
                                                                                         : nullptr;
  }
#endif
  return std::malloc(bytes ? bytes : 1);
}

void Release(const Memory &m, void *p) {
#ifdef GMPI_XLA_CUDA
  if (m.stream) {
    cudaFreeAsync(p, (cudaStream_t)m.stream);
    return;
  }
#endif
  std::free(p);
}

void Copy(const Memory &m, void *dst, const void *src, size_t bytes) {
#ifdef GMPI_XLA_CUDA
  if (m.stream) {
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)m.stream);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

ffi::Error Failed(const char *what) {
  return ffi::Error::Internal(std::string("gmpi.jax: ") + what + ": " + gmpi_last_error());
}

ffi::Error Refused(const std::string &what) {
  return ffi::Error::InvalidArgument("gmpi.jax: " + what);
}

// The status a receive matched, written where mpi4py's Status keeps it; the count as bytes, so
// that Get_count(datatype) divides by the datatype's size as MPI does.
void Fill(MPI_Status *s, const gmpi_msg_status_t &got, gmpi_dtype_t dtype) {
  if (!s) return;
  s->MPI_SOURCE = got.source;
  s->MPI_TAG = got.tag;
  s->MPI_ERROR = MPI_SUCCESS;
  MPI_Status_set_elements_x(s, MPI_BYTE, (MPI_Count)(got.count * gmpi_dtype_size(dtype)));
}

ffi::Error Check(gmpi_status_t st, const char *what) {
  return st == GMPI_SUCCESS ? ffi::Error::Success() : Failed(what);
}

ffi::Error Post(const Memory &m, const Call &c, void *in, size_t bytes) {
  Pending p;
  p.bytes = bytes;
  p.is_recv = c.kind == kIrecv;
  p.stage = Alloc(m, bytes);
  if (!p.stage) return Refused("no memory to stage " + std::to_string(bytes) + " bytes");
  gmpi_status_t st;
  if (p.is_recv) {
    st = gmpi_irecv(p.stage, (size_t)c.count, c.dtype, c.peer, c.tag, c.comm, &p.request);
  } else {
    Copy(m, p.stage, in, bytes);
    st = gmpi_isend(p.stage, (size_t)c.count, c.dtype, c.peer, c.tag, c.comm, &p.request);
  }
  if (st != GMPI_SUCCESS) {
    Release(m, p.stage);
    return Failed(p.is_recv ? "irecv" : "isend");
  }
  std::lock_guard<std::mutex> hold(pending_lock);
  if (!pending.emplace(c.slot, p).second) {
    // The program posted this isend/irecv again before waiting for it (e.g. in a loop body
    // without the wait): the first stays pending and is still waited by the wait.
    gmpi_request_t extra = p.request;
    gmpi_wait(&extra, nullptr);
    Release(m, p.stage);
    return Refused("request slot " + std::to_string(c.slot) +
                   " posted twice without a wait in between: wait for each isend/irecv before "
                   "posting it again");
  }
  return ffi::Error::Success();
}

ffi::Error Wait(const Memory &m, const Call &c, void *out, size_t out_bytes) {
  Pending p;
  {
    std::lock_guard<std::mutex> hold(pending_lock);
    auto it = pending.find(c.slot);
    if (it == pending.end())
      return Refused("wait for request slot " + std::to_string(c.slot) +
                     ", which is not pending (waited twice?)");
    p = it->second;
    pending.erase(it);
  }
  gmpi_msg_status_t got = {};
  gmpi_status_t st = gmpi_wait(&p.request, &got);
  if (st == GMPI_SUCCESS && p.is_recv) {
    Copy(m, out, p.stage, p.bytes < out_bytes ? p.bytes : out_bytes);
    Fill(c.status, got, c.dtype);
  }
  Release(m, p.stage);
  return Check(st, "wait");
}

// in: the call's input buffer (or NULL), out: its output buffer (or NULL).
ffi::Error Run(const Memory &m, const Call &c, const void *in, void *out, size_t in_bytes,
               size_t out_bytes) {
  size_t n = (size_t)c.count;
  gmpi_msg_status_t got = {};
  // rank and size only for the calls that need them: two public calls cost a hot allreduce
  int rank = 0, size = 1;
  if (c.kind != kAllreduce && c.kind != kSendrecv && c.kind != kCopy) {
    gmpi_comm_rank(c.comm, &rank);
    gmpi_comm_size(c.comm, &size);
  }
  switch (c.kind) {
  case kAllreduce: return Check(gmpi_allreduce(in, out, n, c.dtype, c.op, c.comm), "allreduce");
  case kBcast:
    if (rank == c.root && out != in) Copy(m, out, in, out_bytes);
    return Check(gmpi_bcast(out, n, c.dtype, c.root, c.comm), "bcast");
  case kReduce:
    return Check(gmpi_reduce(in, rank == c.root ? out : nullptr, n, c.dtype, c.op, c.root, c.comm),
                 "reduce");
  case kAllgather: return Check(gmpi_allgather(in, out, n, c.dtype, c.comm), "allgather");
  case kAlltoall:
    if (n % (size_t)size)
      return Refused("alltoall of " + std::to_string(n) + " elements over " + std::to_string(size) +
                     " ranks: the first axis must be the size");
    return Check(gmpi_alltoall(in, out, n / (size_t)size, c.dtype, c.comm), "alltoall");
  case kGather:
    return Check(gmpi_gather(in, rank == c.root ? out : nullptr, n, c.dtype, c.root, c.comm),
                 "gather");
  case kScatter:
    return Check(gmpi_scatter(rank == c.root ? in : nullptr, out, n, c.dtype, c.root, c.comm),
                 "scatter");
  case kBarrier: return Check(gmpi_barrier(c.comm), "barrier");
  case kSend: return Check(gmpi_send(in, n, c.dtype, c.peer, c.tag, c.comm), "send");
  case kRecv:
    if (gmpi_recv(out, n, c.dtype, c.peer, c.tag, c.comm, &got) != GMPI_SUCCESS)
      return Failed("recv");
    Fill(c.status, got, c.dtype);
    return ffi::Error::Success();
  case kSendrecv:
    // peer/tag: the send's destination and tag; peer2/tag2: the receive's source and tag
    if (gmpi_sendrecv(in, in_bytes / gmpi_dtype_size(c.dtype), c.dtype, c.peer, c.tag, out, n,
                      c.dtype, c.peer2, c.tag2, c.comm, &got) != GMPI_SUCCESS)
      return Failed("sendrecv");
    Fill(c.status, got, c.dtype);
    return ffi::Error::Success();
  case kIsend:
  case kIrecv: return Post(m, c, const_cast<void *>(in), c.kind == kIsend ? in_bytes : out_bytes);
  case kWait: return Wait(m, c, out, out_bytes);
  case kCopy:
    if (out_bytes != in_bytes)
      return Refused("copy of " + std::to_string(in_bytes) + " bytes into " +
                     std::to_string(out_bytes));
    Copy(m, out, in, out_bytes);
    return ffi::Error::Success();
  default: return Refused("unknown call kind " + std::to_string(c.kind));
  }
}

// The call's attributes, packed into one int64 array named "args" in this order
// (python/gmpi/jax/_xla.py): XLA decodes one array attribute in a third of the time of twelve
// scalar ones (docs/performance.md, the floor of a gmpi.jax call).
enum Field : int {
  fKind,
  fComm,
  fDtype,
  fOp,
  fCount,
  fRoot,
  fPeer,
  fTag,
  fPeer2,
  fTag2,
  fStatus,
  fSlot,
  kFields
};
using Fields = ffi::Span<const int64_t>;

const char *const kFieldNames[kFields] = {"kind", "comm", "dtype", "op",   "count",  "root",
                                          "peer", "tag",  "peer2", "tag2", "status", "slot"};

// A field that the Call keeps as an int32: out of range is the lowering's bug, named.
ffi::Error Narrow(Fields f, Field i, int32_t *v) {
  if (f[i] < INT32_MIN || f[i] > INT32_MAX)
    return Refused(std::string("field '") + kFieldNames[i] + "' = " + std::to_string(f[i]) +
                   " of attribute 'args' is out of the int32 range");
  *v = static_cast<int32_t>(f[i]);
  return ffi::Error::Success();
}

ffi::Error Decode(Fields f, Call *c) {
  if (f.size() != kFields)
    return Refused("attribute 'args' has " + std::to_string(f.size()) + " fields, expected " +
                   std::to_string(kFields) + ": gmpi.jax and libgmpi_xla are of different builds");
  int32_t dtype = 0, op = 0;
  const struct {
    Field i;
    int32_t *v;
  } narrow[] = {{fKind, &c->kind}, {fDtype, &dtype}, {fOp, &op},          {fRoot, &c->root},
                {fPeer, &c->peer}, {fTag, &c->tag},  {fPeer2, &c->peer2}, {fTag2, &c->tag2}};
  for (const auto &n : narrow) {
    ffi::Error e = Narrow(f, n.i, n.v);
    if (e.failure()) return e;
  }
  if (c->kind < 0 || c->kind >= kKindCount)
    return Refused("field 'kind' = " + std::to_string(c->kind) +
                   " of attribute 'args' is not a call kind");
  c->comm = reinterpret_cast<gmpi_comm_t>(f[fComm]);
  c->dtype = static_cast<gmpi_dtype_t>(dtype);
  c->op = static_cast<gmpi_op_t>(op);
  c->count = f[fCount];
  c->status = reinterpret_cast<MPI_Status *>(f[fStatus]);
  c->slot = f[fSlot];
  return ffi::Error::Success();
}

// Operands: the inputs, then the token; results: the outputs, then the token. Irecv's first
// result is its request (the slot number), isend's too; wait reads only the slot attribute.
ffi::Error Dispatch(const Memory &m, ffi::RemainingArgs args, ffi::RemainingRets rets,
                    const Call &c) {
  const void *in = nullptr;
  void *out = nullptr;
  size_t in_bytes = 0, out_bytes = 0;
  if (args.size() > 1) { // a data operand before the token
    auto a = args.get<ffi::AnyBuffer>(0);
    if (!a.has_value()) return a.error();
    in = a->untyped_data();
    in_bytes = a->size_bytes();
  }
  if (rets.size() > 1) { // a data result before the token
    auto r = rets.get<ffi::AnyBuffer>(0);
    if (!r.has_value()) return r.error();
    out = (*r)->untyped_data();
    out_bytes = (*r)->size_bytes();
  }
  if (c.kind == kIsend || c.kind == kIrecv) {
    // The request result is an int32 scalar that only orders the wait after the post: the slot
    // on the host, zero on a device. Irecv has no data result; its size comes from the count.
    if (out && !m.stream) *static_cast<int32_t *>(out) = static_cast<int32_t>(c.slot);
#ifdef GMPI_XLA_CUDA
    if (out && m.stream) cudaMemsetAsync(out, 0, sizeof(int32_t), (cudaStream_t)m.stream);
#endif
    out = nullptr;
    out_bytes = c.kind == kIrecv ? (size_t)c.count * gmpi_dtype_size(c.dtype) : 0;
  }
  return Run(m, c, in, out, in_bytes, out_bytes);
}

auto OnHost = [](ffi::RemainingArgs args, ffi::RemainingRets rets, Fields fields) {
  Call c = {};
  ffi::Error e = Decode(fields, &c);
  if (e.failure()) return e;
  return Dispatch(Memory{nullptr}, args, rets, c);
};

#ifdef GMPI_XLA_CUDA
// Device arrays: gmpi runs stream-ordered on XLA's stream, so collectives are enqueued there
// and return; point to point completes as gmpi's waits do (docs/design.md, stream-ordered mode).
auto OnDevice = [](cudaStream_t stream, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   Fields fields) {
  Call c = {};
  ffi::Error e = Decode(fields, &c);
  if (e.failure()) return e;
  // the copy names no comm: it runs on XLA's stream alone
  if (c.kind != kCopy && gmpi_comm_set_stream(c.comm, stream) != GMPI_SUCCESS)
    return Failed("gmpi_comm_set_stream");
  return Dispatch(Memory{stream}, args, rets, c);
};
#endif

} // namespace

// The exported symbols: python/gmpi/jax registers them with XLA, for the cpu platform and, when
// built with CUDA, the CUDA platform.
extern "C" __attribute__((visibility("default"))) XLA_FFI_Error *
gmpi_xla_call(XLA_FFI_CallFrame *call_frame);
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    gmpi_xla_call, OnHost, ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<Fields>("args"));

#ifdef GMPI_XLA_CUDA
extern "C" __attribute__((visibility("default"))) XLA_FFI_Error *
gmpi_xla_call_cuda(XLA_FFI_CallFrame *call_frame);
XLA_FFI_DEFINE_HANDLER_SYMBOL(gmpi_xla_call_cuda, OnDevice,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<Fields>("args"));
#endif
