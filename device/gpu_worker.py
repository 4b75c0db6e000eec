"""A GPU held by a child process, so that a kernel that faults costs one call, not the caller.

A device fault (illegal instruction, misaligned address, trap) ends CUDA for the whole process
that ran the kernel (see `tcgen05_conformance.device.launch`). `GpuWorker` therefore runs kernels in a child,
`python -m tcgen05_conformance.device.gpu_worker ORDINAL`, which opens the GPU, says what it is, then links and
launches kernels on request (linked modules cached by PTX text). A call whose kernel fails ends
that child; the next call starts a fresh one, with a fresh CUDA context.

Requests and replies are pickled over the child's stdin and a private copy of its stdout (its
file descriptor 1 points at stderr, so whatever CUDA libraries print cannot garble replies).
The child shares its parent's process group, so whoever kills the parent's group (the
supervisor of `run --timeout`) ends it too, and it exits when its parent closes its stdin.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import weakref
from dataclasses import dataclass
from typing import BinaryIO, Sequence

import numpy as np

from tcgen05_conformance.device.launch import GpuUnavailable


class KernelFailed(RuntimeError):
    """A kernel failed to link (`stage` "link") or to run (`stage` "run"); the message is one line."""

    def __init__(self, stage: str, message: str):
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class Launch:
    """One kernel launch: `entry` of the PTX module linked for `arch`, `grid` CTAs (in clusters
    of `cluster` when given) of `block` threads with `shared_bytes` of dynamic shared memory; its
    parameters are the device addresses of `inputs` then of `output`, copied in before and
    `output` copied back after."""

    ptx: str
    arch: str
    entry: str
    grid: int
    block: int
    shared_bytes: int
    inputs: Sequence[np.ndarray]
    output: np.ndarray
    cluster: int | None = None


class GpuWorker:
    """GPU `ordinal` in a child process, started on first use and again after a failed call."""

    def __init__(self, ordinal: int = 0):
        self.ordinal = ordinal
        self._child: subprocess.Popen | None = None
        self._stop: weakref.finalize | None = None  # ends the child, at the latest when this object goes
        self._description: tuple[str, tuple[int, int]] | None = None

    def describe(self) -> tuple[str, tuple[int, int]]:
        """(name, compute capability) of the GPU; GpuUnavailable (one line) when there is none."""
        if self._description is None:
            self._start()
        return self._description

    def run(self, launch: Launch) -> np.ndarray:
        """The output array after the launch; KernelFailed when it does not link or run."""
        if self._child is None:
            self._start()
        try:
            pickle.dump(launch, self._child.stdin)
            self._child.stdin.flush()
            reply = pickle.load(self._child.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            status = self._end()
            raise KernelFailed("run", f"the GPU worker process died ({_exit_text(status)})") from None
        if reply[0] == "ok":
            return reply[1]
        if reply[1] == "run":
            self._end()  # the child has stopped: CUDA is unusable in it
        raise KernelFailed(reply[1], reply[2])

    def close(self) -> None:
        if self._child is not None:
            self._end()

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        child = subprocess.Popen([sys.executable, "-m", "tcgen05_conformance.device.gpu_worker", str(self.ordinal)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        try:
            hello = pickle.load(child.stdout)
        except (EOFError, pickle.UnpicklingError):
            child.kill()
            raise GpuUnavailable(f"no CUDA device: the GPU worker process died at start ({_exit_text(child.wait())})") from None
        if hello[0] == "unavailable":
            child.wait()
            raise GpuUnavailable(hello[1])
        self._child, self._description = child, (hello[1], hello[2])
        self._stop = weakref.finalize(self, _stop, child)

    def _end(self) -> int | None:
        self._child = None
        return self._stop()


def _stop(child: subprocess.Popen) -> int | None:
    """Close the child's stdin (it exits at end of input) and reap it; kill it if it hangs."""
    try:
        child.stdin.close()
    except OSError:
        pass
    try:
        return child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def _exit_text(status: int | None) -> str:
    if status is None:
        return "status unknown"
    return f"signal {-status}" if status < 0 else f"exit status {status}"


def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


def _serve(ordinal: int, requests: BinaryIO, replies: BinaryIO) -> None:
    """The child: open the GPU, then run launches until stdin ends or one fails to run, which
    ends the process at once: no clean-up, which the faulted context would refuse, noisily."""
    from tcgen05_conformance.device.launch import Gpu

    def reply(message: tuple) -> None:
        pickle.dump(message, replies)
        replies.flush()

    try:
        gpu = Gpu(ordinal)
    except GpuUnavailable as e:
        reply(("unavailable", str(e)))
        return
    reply(("ready", gpu.name, gpu.compute_capability))
    kernels = {}
    while True:
        try:
            launch: Launch = pickle.load(requests)
        except EOFError:
            return
        key = (launch.ptx, launch.arch, launch.entry)
        try:
            if key not in kernels:
                kernels[key] = gpu.load(launch.ptx, launch.arch).get_kernel(launch.entry)
        except Exception as e:  # the linker's error types vary with the cuda-python version
            reply(("error", "link", _one_line(e)))
            continue
        try:
            arrays = [gpu.to_device(a) for a in launch.inputs]
            out = gpu.to_device(launch.output)
            gpu.launch(kernels[key], launch.grid, launch.block, launch.shared_bytes, *arrays, out, cluster=launch.cluster)
            result = gpu.to_host(out)
        except Exception as e:  # any CUDA failure may have poisoned the context: report it and stop
            reply(("error", "run", _one_line(e)))
            os._exit(1)
        reply(("ok", result))


if __name__ == "__main__":
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(int(sys.argv[1]), sys.stdin.buffer, replies)
