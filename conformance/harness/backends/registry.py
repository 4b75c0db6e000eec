"""The one place backends are named: the registered backends by module path (imported only when
one is made), and the specs a user may give wherever a backend is asked for:

- a registered name: `oracle`, `ptxas`, `hopper`, `blackwell`;
- `sim:CMD`, a simulator speaking the line protocol of docs/simulators.md;
- `MODULE:FACTORY`, a plugin: `package.module:callable`, called with `profile=`.

`backend_from_spec` makes the backend, a plugin's behind the guard of
`tcgen05_conformance.harness.backends.guarded` (its protocol checked, its misbehaviour charged to
its cases); `uses_gpu` says, without making it, whether it runs on a GPU (`run --gpus` spreads
those over the GPUs).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry stays light (no numpy): the command line reads it to build its parsers
    from tcgen05_conformance.harness.backends.base import Backend

# name -> (factory as module:attribute, what it is, for --help)
REGISTERED: dict[str, tuple[str, str]] = {
    "oracle": ("tcgen05_conformance.harness.backends.oracle:OracleBackend", "the golden model (the default reference)"),
    "ptxas": ("tcgen05_conformance.harness.backends.ptxas:PtxasBackend", "whether the assembler accepts each kernel"),
    "hopper": ("tcgen05_conformance.harness.backends.hopper:HopperBackend", "wgmma / mma.sp on an sm_90 GPU"),
    "blackwell": ("tcgen05_conformance.harness.backends.blackwell:BlackwellBackend", "tcgen05 on an sm_100 / sm_103 GPU"),
}
BACKENDS = tuple(REGISTERED)
DEFAULT_BACKENDS = ("oracle", "ptxas")
DEFAULT_REFERENCE = "oracle"
SIM_PREFIX = "sim:"  # `sim:CMD` names the simulator backend (tcgen05_conformance.harness.backends.sim) running CMD
SIM_FACTORY = "tcgen05_conformance.harness.backends.sim:SimBackend"
SIM_COMMAND_PROBLEM = "tcgen05_conformance.harness.backends.sim:command_problem"
GUARDED_FACTORY = "tcgen05_conformance.harness.backends.guarded:GuardedBackend"
FACTORY_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def spec_problem(spec: str) -> str | None:
    """Why `spec` names no backend (checked without making one: a sim:CMD command must exist), or None."""
    if spec.startswith(SIM_PREFIX):  # before MODULE:FACTORY, which `sim:x` also matches
        return _load(SIM_COMMAND_PROBLEM)(spec[len(SIM_PREFIX):])
    if spec in REGISTERED or FACTORY_PATH.fullmatch(spec):
        return None
    return f"{spec!r} is neither a backend ({', '.join(BACKENDS)}), sim:CMD nor MODULE:FACTORY"


class SpecError(ValueError):
    """A backend spec that names nothing to make: bad usage (one line), not a device's fault."""


def is_plugin(spec: str) -> bool:
    """Whether `spec` names a plugin's factory (`MODULE:FACTORY`): code from outside the project,
    which the harness runs isolated (`tcgen05_conformance.harness.backends.guarded`)."""
    return not spec.startswith(SIM_PREFIX) and spec not in REGISTERED and FACTORY_PATH.fullmatch(spec) is not None


def plugin_factory(spec: str):
    """The factory a `MODULE:FACTORY` spec names, imported; SpecError, on one line, when it cannot
    be loaded or is not callable. (Whatever else the module's own code raises goes up as it is.)"""
    try:
        factory = _load(spec)
    except (ImportError, AttributeError) as e:
        module, _, attr = spec.partition(":")
        raise SpecError(f"backend {spec!r}: cannot load {attr} from {module} ({e})") from None
    if not callable(factory):
        raise SpecError(f"backend {spec!r}: {type(factory).__name__} object is not a factory (not callable)")
    return factory


def backend_from_spec(spec: str, profile: str | None = None) -> Backend:
    """The backend `spec` names, made for numeric profile `profile`: a plugin's behind the guard of
    `tcgen05_conformance.harness.backends.guarded` (what its factory or its calls do wrong becomes
    errors of its cases); SpecError, on one line, when the spec names none."""
    if spec.startswith(SIM_PREFIX):
        return _load(SIM_FACTORY)(spec[len(SIM_PREFIX):], profile)
    if spec in REGISTERED:
        return _load(REGISTERED[spec][0])(profile=profile)
    if not FACTORY_PATH.fullmatch(spec):
        raise SpecError(f"unknown backend {spec!r}; backends: {', '.join(BACKENDS)}, sim:CMD or MODULE:FACTORY")
    return _load(GUARDED_FACTORY)(spec, profile)


def uses_gpu(spec: str) -> bool:
    """Whether the backend `spec` names runs on a GPU: its factory (for the registered backends,
    its class) has `uses_gpu = True`. Read without making the backend, so that a run can pin the
    child processes observing with it to one GPU each before any of them opens CUDA; a plugin's is
    read in a child process, so that no plugin code runs in the harness's. False for sim:CMD and
    for a factory that cannot be loaded (making the backend says why)."""
    if spec in REGISTERED:
        return getattr(_load(REGISTERED[spec][0]), "uses_gpu", False) is True
    return is_plugin(spec) and _plugin_uses_gpu(spec)


USES_GPU_TIMEOUT_S = 120.0  # importing a plugin's module, in the child that reads its uses_gpu


@functools.lru_cache(maxsize=None)
def _plugin_uses_gpu(spec: str) -> bool:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # plugins from a test tree too
    try:
        child = subprocess.run([sys.executable, "-m", __name__, spec], stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=USES_GPU_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return child.returncode == 0 and child.stdout.splitlines()[-1:] == [_USES_GPU]


_USES_GPU = b"uses_gpu = True"


def _print_uses_gpu(spec: str) -> None:
    """The child's side of `_plugin_uses_gpu`: says `_USES_GPU` on its last line when it does."""
    try:
        factory = plugin_factory(spec)
    except SpecError:
        return
    print(_USES_GPU.decode() if getattr(factory, "uses_gpu", False) is True else "", flush=True)


def _load(path: str):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


if __name__ == "__main__":
    _print_uses_gpu(sys.argv[1])
