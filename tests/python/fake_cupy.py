"""A minimal stand-in for cupy, for testing the binding's
__cuda_array_interface__ path without a GPU: arrays that export the
interface (version 3) over host memory, a device with an id, empty() and
cuda.get_current_stream(), as cupy has them. The tests check conversions
and pointers and never run a kernel on these arrays."""

import numpy


class _Device:
    def __init__(self, index):
        self.id = index


class ndarray:
    def __init__(self, data, device=0, readonly=False):
        self._data, self.device, self._readonly = data, _Device(device), readonly

    @property
    def __cuda_array_interface__(self):
        a = self._data
        return {"shape": a.shape, "typestr": a.dtype.str, "version": 3,
                "data": (a.ctypes.data, self._readonly),
                "strides": None if a.flags.c_contiguous else a.strides,
                "stream": cuda.get_current_stream().ptr}

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def T(self):
        return ndarray(self._data.T, self.device.id, self._readonly)

    def __getitem__(self, index):
        return ndarray(self._data[index], self.device.id, self._readonly)

    def get(self):
        return self._data.copy()


def asarray(values, dtype=None, device=0):
    return ndarray(numpy.ascontiguousarray(values, dtype), device)


def empty(shape, dtype="float32"):
    return ndarray(numpy.empty(shape, dtype), 0)


class _Stream:
    ptr = 0xC0FFEE


class cuda:
    @staticmethod
    def get_current_stream():
        return _Stream()
