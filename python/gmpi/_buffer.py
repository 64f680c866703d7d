# SPDX-License-Identifier: BSD-3-Clause
"""Buffers: numpy arrays and buffer-protocol objects on the host; on the device any object with
__cuda_array_interface__ (CuPy, PyTorch, Numba) or __dlpack__. Never copied: gmpi reads and
writes the caller's memory, which must be contiguous."""
import ctypes

from ._lib import check_arg, dtype_from_name

_dtype_cache = {}


def _gmpi_dtype(name, what):
    """The gmpi dtype of a numpy-style dtype name ("float32", "bool", "complex64")."""
    if name not in _dtype_cache:
        try:
            _dtype_cache[name] = dtype_from_name(name)
        except RuntimeError:
            _dtype_cache[name] = None
    d = _dtype_cache[name]
    check_arg(d is not None, "%s has dtype %s, which gmpi cannot move (int8..uint64, float16, "
              "bfloat16, float32, float64, complex64, complex128, bool)" % (what, name))
    return d


class Buffer:
    """Address, element count and gmpi dtype of one buffer, holding its owner alive."""

    __slots__ = ("ptr", "count", "dtype", "device", "owner", "keep")

    def __init__(self, ptr, count, dtype, device, owner, keep=None):
        self.ptr, self.count, self.dtype = ptr, count, dtype
        self.device, self.owner, self.keep = device, owner, keep


def _c_contiguous(shape, strides, itemsize):
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _from_cuda_interface(obj, cai, what, writable):
    import numpy as np

    shape = tuple(cai["shape"])
    dt = np.dtype(cai["typestr"])
    check_arg(dt.isnative, "%s has byte order %s; gmpi moves native-order data only"
              % (what, cai["typestr"]))
    strides = cai.get("strides")
    check_arg(strides is None or _c_contiguous(shape, strides, dt.itemsize),
              "%s is not contiguous (strides %s); pass a contiguous tensor (.contiguous())"
              % (what, strides))
    ptr, readonly = cai["data"]
    check_arg(not (writable and readonly), "%s is read-only" % what)
    count = 1
    for n in shape:
        count *= n
    return Buffer(ptr, count, _gmpi_dtype(dt.name, what), True, obj)


# DLPack (dlpack.h): the C structs, and (type code, bits) to gmpi's dtype names.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_NAMES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
             (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
             (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
             (5, 64): "complex64", (5, 128): "complex128", (6, 8): "bool"}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes, _capsule_pointer.restype = [ctypes.py_object, ctypes.c_char_p], \
    ctypes.c_void_p


def _from_dlpack(obj, what):
    # The capsule is not renamed "used_dltensor": its destructor frees the tensor view when the
    # Buffer (which keeps it) goes, and the producer's object stays alive through owner.
    capsule = obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))  # DLManagedTensor starts
    kind = t.device.device_type
    check_arg(kind in (_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED),
              "%s lives on DLPack device type %d; gmpi moves host and CUDA memory" % (what, kind))
    name = _DL_NAMES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    check_arg(name is not None, "%s has DLPack dtype (code %d, bits %d, lanes %d), which gmpi "
              "cannot move" % (what, t.dtype.code, t.dtype.bits, t.dtype.lanes))
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = t.dtype.bits // 8
    if t.strides:
        strides = [t.strides[i] * itemsize for i in range(t.ndim)]
        check_arg(_c_contiguous(shape, strides, itemsize),
                  "%s is not contiguous; pass a contiguous tensor (.contiguous())" % what)
    count = 1
    for n in shape:
        count *= n
    return Buffer((t.data or 0) + t.byte_offset, count, _gmpi_dtype(name, what),
                  kind != _DL_CPU, obj, capsule)


def _from_host(obj, what, writable):
    import numpy as np

    if not isinstance(obj, np.ndarray):
        try:
            obj = np.asarray(memoryview(obj))  # bytearray, array.array, ...: no copy
        except TypeError:
            check_arg(False, "%s is a %s, not a buffer gmpi can move (numpy array, object with "
                      "__cuda_array_interface__ or __dlpack__)" % (what, type(obj).__name__))
    check_arg(obj.flags.c_contiguous or obj.flags.f_contiguous,
              "%s is not contiguous (strides %s); pass np.ascontiguousarray(...) or a "
              "contiguous slice" % (what, obj.strides))
    check_arg(not writable or obj.flags.writeable, "%s is read-only" % what)
    check_arg(obj.dtype.isnative, "%s has byte order %s; gmpi moves native-order data only"
              % (what, obj.dtype.str))
    return Buffer(obj.ctypes.data, obj.size, _gmpi_dtype(obj.dtype.name, what), False, obj)


def as_buffer(obj, what, writable):
    """The Buffer of obj; what names the argument in errors ("recvbuf")."""
    import numpy as np

    check_arg(obj is not None, "argument '%s' is None" % what)
    what = "argument '%s'" % what
    if isinstance(obj, np.ndarray):
        return _from_host(obj, what, writable)
    try:  # PyTorch refuses it for tensors that require grad (and some bfloat16): DLPack next
        cai = getattr(obj, "__cuda_array_interface__", None)
    except (TypeError, RuntimeError):
        cai = None
    # PyTorch (2.x) describes bfloat16 as raw bytes ("<V2") there; DLPack names it: use that.
    opaque = cai is not None and "V" in str(cai.get("typestr", ""))
    if cai is not None and not (opaque and hasattr(obj, "__dlpack__")):
        return _from_cuda_interface(obj, cai, what, writable)
    if hasattr(obj, "__dlpack__"):  # PyTorch CPU tensors too: no copy through __array__
        return _from_dlpack(obj, what)
    return _from_host(obj, what, writable)


def sync_producer(bufs):
    """Device data written by the producer's stream (CuPy's or PyTorch's current stream) is
    complete before gmpi reads it: gmpi runs on its own stream."""
    for b in bufs:
        if b is None or not b.device:
            continue
        mod = type(b.owner).__module__.split(".")[0]
        if mod == "cupy":
            import cupy

            cupy.cuda.get_current_stream().synchronize()
        elif mod == "torch":
            import torch

            torch.cuda.current_stream(b.owner.device).synchronize()
