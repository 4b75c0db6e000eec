"""The launch path: compile PTX to a cubin with nvJitLink (`tcgen05_conformance.device.assembler.cubin`), load it, launch kernels (in clusters,
with more than 48 KiB of dynamic shared memory where asked) and move arrays in bulk, through
cuda-python (`cuda.core` for linking, loading, allocation and launches; the driver API of
`cuda.bindings` for host <-> device copies and kernel attributes).

A device fault (illegal instruction, misaligned address, trap) ends CUDA for the whole process:
the driver refuses every later call, a reset primary context included (on an H100, driver 580,
cuDevicePrimaryCtxRetain after cuDevicePrimaryCtxReset returns CUDA_ERROR_LAUNCH_FAILED). Code
that must survive a faulting kernel runs it in a process of its own (`tcgen05_conformance.device.gpu_worker`)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tcgen05_conformance.device.assembler import cubin

DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a kernel may use without opting in


class GpuUnavailable(RuntimeError):
    """No usable CUDA GPU (or no cuda.core) here; the message says why, on one line."""


def _check(result: tuple) -> Any:
    from cuda.bindings import driver

    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err.name}")
    return rest[0] if len(rest) == 1 else rest


def visible_devices() -> list[str]:
    """The CUDA devices this process may use, each as the CUDA_VISIBLE_DEVICES value that gives a
    process that device alone: the entries of CUDA_VISIBLE_DEVICES when it is set (as far as the
    driver takes them: it stops at the first it cannot use), else one ordinal per device the driver
    counts. GpuUnavailable when there is no driver (or no cuda-python to reach it)."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise GpuUnavailable(f"no CUDA device: cuda-python is not installed ({e})") from None
    try:
        _check(driver.cuInit(0))
        count = _check(driver.cuDeviceGetCount())
    except RuntimeError as e:
        raise GpuUnavailable(f"no CUDA device: {e}") from None
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return [str(i) for i in range(count)]
    return [entry.strip() for entry in listed.split(",")][:count]


@dataclass
class DeviceArray:
    """A device buffer holding an array of `shape` and `dtype`, `offset` bytes into it."""

    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int = 0

    @property
    def address(self) -> int:
        return int(self.buffer.handle) + self.offset

    def pointer(self, offset: int = 0) -> np.uint64:
        """The device address `offset` bytes into the array, as a kernel argument."""
        return np.uint64(self.address + offset)

    def view(self, offset: int, shape: tuple[int, ...], dtype) -> DeviceArray:
        """An array of `shape` and `dtype` at `offset` bytes into this one's memory (no copy)."""
        return DeviceArray(self.buffer, tuple(shape), np.dtype(dtype), self.offset + offset)


class Pinned:
    """Page-locked host memory (cuMemAllocHost) as `array` (uint8 [nbytes]), for asynchronous
    copies back; freed with this object (copy out what must outlive it)."""

    def __init__(self, nbytes: int):
        import ctypes

        from cuda.bindings import driver

        self.pointer = int(_check(driver.cuMemAllocHost(max(1, nbytes))))
        self.array = np.frombuffer((ctypes.c_uint8 * max(1, nbytes)).from_address(self.pointer), np.uint8)[:nbytes]
        self.free = driver.cuMemFreeHost  # held: at interpreter exit the module may be gone

    def __del__(self) -> None:
        self.free(self.pointer)


class Gpu:
    """One CUDA device made current, with a stream for launches."""

    def __init__(self, ordinal: int = 0):
        try:
            from cuda.core import Device
            self.device = Device(ordinal)
            self.device.set_current()
        except Exception as e:  # ImportError, no driver, no device: all mean "cannot run here"
            cause = " ".join(f"{type(e).__name__}: {e}".split())
            raise GpuUnavailable(f"no CUDA device: GPU {ordinal} is not usable through cuda.core ({cause})") from None
        from cuda.bindings import driver

        self.stream = self.device.create_stream()
        self.driver_api = driver  # a campaign's worker calls it tens of thousands of times: looked up once
        self.configs: dict[tuple, Any] = {}  # launch configurations, made once per shape

    @functools.cached_property
    def _core(self) -> tuple:
        """cuda.core's LaunchConfig and launch, and the options of a timing event: imported at the
        first launch, once."""
        from cuda.core import EventOptions, LaunchConfig, launch

        return LaunchConfig, launch, EventOptions(timing_enabled=True)

    @property
    def name(self) -> str:
        return self.device.name

    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor), e.g. (9, 0) for an H100."""
        major, minor = self.device.compute_capability
        return int(major), int(minor)

    @property
    def arch(self) -> str:
        """The compute capability as an architecture name, e.g. "sm_90"."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def driver(self) -> str:
        """The CUDA driver's version, as reports record it, e.g. "CUDA driver 13.0"."""
        from cuda.bindings import driver

        version = _check(driver.cuDriverGetVersion())
        return f"CUDA driver {version // 1000}.{version % 1000 // 10}"

    def load(self, ptx: str, arch: str):
        """The cubin of a PTX module, linked for `arch` (e.g. "sm_90a") by nvJitLink, loaded."""
        from cuda.core import ObjectCode

        return ObjectCode.from_cubin(cubin(ptx, arch))

    def load_cubin(self, data: bytes):
        """A cubin built elsewhere (e.g. by NVRTC, `tcgen05_conformance.device.check_kernels`), loaded."""
        from cuda.core import ObjectCode

        return ObjectCode.from_cubin(data)

    def to_device(self, array: np.ndarray) -> DeviceArray:
        from cuda.bindings import driver

        array = np.ascontiguousarray(array)
        out = self.empty(array.shape, array.dtype)
        self.stream.sync()
        if array.nbytes:
            _check(driver.cuMemcpyHtoD(out.address, array.ctypes.data, array.nbytes))
        return out

    def empty(self, shape: tuple[int, ...], dtype) -> DeviceArray:
        dtype = np.dtype(dtype)
        nbytes = max(1, int(np.prod(shape)) * dtype.itemsize)
        return DeviceArray(self.device.allocate(nbytes, stream=self.stream), tuple(shape), dtype)

    def to_host(self, array: DeviceArray) -> np.ndarray:
        from cuda.bindings import driver

        out = np.empty(array.shape, array.dtype)
        self.stream.sync()
        if out.nbytes:
            _check(driver.cuMemcpyDtoH(out.ctypes.data, array.address, out.nbytes))
        return out

    def to_host_rows(self, array: DeviceArray, rows: Sequence[int]) -> np.ndarray:
        """Rows (along the first axis) of a device array, one copy each: a few rows of a large
        result without copying the rest."""
        from cuda.bindings import driver

        row_bytes = int(np.prod(array.shape[1:], dtype=np.int64)) * array.dtype.itemsize
        out = np.empty((len(rows),) + tuple(array.shape[1:]), array.dtype)
        self.stream.sync()
        for i, row in enumerate(rows):
            if row_bytes:
                _check(driver.cuMemcpyDtoH(out[i].ctypes.data, array.address + int(row) * row_bytes, row_bytes))
        return out

    # --- stream-ordered work, for a worker that queues its next launch before it reads the last back ---

    def to_device_async(self, array: np.ndarray, out: DeviceArray | None = None) -> DeviceArray:
        """`to_device` queued on this GPU's stream (no wait for the work before it), into `out` when
        given (else a new array). From page-locked memory (`Pinned`) the copy runs while the host
        goes on, and `array` must stay unchanged until an event recorded after it has completed;
        from pageable memory the driver stages it first, and may wait for the stream to do so."""
        array = np.ascontiguousarray(array)
        out = self.empty(array.shape, array.dtype) if out is None else out
        if array.nbytes:
            _check(self.driver_api.cuMemcpyHtoDAsync(out.address, array.ctypes.data, array.nbytes, self.stream.handle))
        return out

    def to_host_async(self, array: DeviceArray, out: np.ndarray) -> None:
        """Queue a copy of `array` into `out` (page-locked host memory, `pinned`): valid once an
        event recorded after it has completed."""
        if out.nbytes:
            _check(self.driver_api.cuMemcpyDtoHAsync(out.ctypes.data, array.address, out.nbytes, self.stream.handle))

    def record(self):
        """A timing event recorded on this GPU's stream (`later - earlier` is milliseconds)."""
        return self.stream.record(options=self._core[2])

    def launch(self, kernel, grid: int | tuple[int, int], block: int, shared_bytes: int, *args,
               cluster: int | None = None) -> None:
        """Launch `grid` CTAs (x, or (x, y)) of `block` threads on this GPU's stream, in clusters of
        `cluster` CTAs when given (`grid` a multiple of it); DeviceArray arguments pass their
        addresses. Above 48 KiB of dynamic shared memory the kernel's limit is raised to
        `shared_bytes` first."""
        if cluster and grid % cluster:
            raise ValueError(f"a grid of {grid} CTAs is not a whole number of clusters of {cluster}")
        if shared_bytes > DEFAULT_SHARED_LIMIT:
            attribute = self.driver_api.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(self.driver_api.cuKernelSetAttribute(attribute, shared_bytes, kernel.handle, self.device.device_id))
        values = [a.pointer() if type(a) is DeviceArray else a for a in args]
        config_type, launch, _ = self._core
        key = (grid, block, shared_bytes, cluster)
        config = self.configs.get(key)
        if config is None:  # with a cluster, cuda.core counts the grid in clusters
            config = self.configs[key] = (
                config_type(grid=grid // cluster, cluster=cluster, block=block, shmem_size=shared_bytes)
                if cluster else config_type(grid=grid, block=block, shmem_size=shared_bytes))
        launch(self.stream, config, kernel, *values)

    def sync(self) -> None:
        self.stream.sync()
