"""The one place backends are named: the registered backends by module path (imported only when
one is made), and the specs a user may give wherever a backend is asked for:

- a registered name: `oracle`, `ptxas`, `hopper`, `blackwell`;
- `sim:CMD`, a simulator speaking the line protocol of docs/simulators.md;
- `MODULE:FACTORY`, a plugin: `package.module:callable`, called with `profile=`.

`backend_from_spec` makes the backend and checks that it has the protocol of
`tcgen05_conformance.harness.backends.base` (a name, `unavailable_reason`, `observe`); `uses_gpu` says,
without making it, whether it runs on a GPU (`run --gpus` spreads those over the GPUs).
"""

from __future__ import annotations

import importlib
import re
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
FACTORY_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
PROTOCOL = ("name", "unavailable_reason", "observe")


def spec_problem(spec: str) -> str | None:
    """Why `spec` names no backend (checked without making one: a sim:CMD command must exist), or None."""
    if spec.startswith(SIM_PREFIX):  # before MODULE:FACTORY, which `sim:x` also matches
        return _load(SIM_COMMAND_PROBLEM)(spec[len(SIM_PREFIX):])
    if spec in REGISTERED or FACTORY_PATH.fullmatch(spec):
        return None
    return f"{spec!r} is neither a backend ({', '.join(BACKENDS)}), sim:CMD nor MODULE:FACTORY"


def backend_from_spec(spec: str, profile: str | None = None) -> Backend:
    """The backend `spec` names, made for numeric profile `profile`; ValueError, on one line, when
    the spec names none or its factory does not make a backend."""
    if spec.startswith(SIM_PREFIX):
        return _load(SIM_FACTORY)(spec[len(SIM_PREFIX):], profile)
    if spec in REGISTERED:
        return _load(REGISTERED[spec][0])(profile=profile)
    if not FACTORY_PATH.fullmatch(spec):
        raise ValueError(f"unknown backend {spec!r}; backends: {', '.join(BACKENDS)}, sim:CMD or MODULE:FACTORY")
    try:
        factory = _load(spec)
    except (ImportError, AttributeError) as e:
        module, _, attr = spec.partition(":")
        raise ValueError(f"backend {spec!r}: cannot load {attr} from {module} ({e})") from None
    if not callable(factory):
        raise ValueError(f"backend {spec!r}: {type(factory).__name__} object is not a factory (not callable)")
    try:
        backend = factory(profile=profile)
    except TypeError as e:
        raise ValueError(f"backend {spec!r}: not a backend factory: calling it with profile= failed ({e})") from None
    missing = [a for a in PROTOCOL if not hasattr(backend, a) or (a != "name" and not callable(getattr(backend, a)))]
    if missing:
        raise ValueError(f"backend {spec!r}: the factory made a {type(backend).__name__}, which lacks {', '.join(missing)} "
                         f"(a backend has {', '.join(PROTOCOL)}: conformance/harness/backends/base.py)")
    return backend


def uses_gpu(spec: str) -> bool:
    """Whether the backend `spec` names runs on a GPU: its factory (for the registered backends,
    its class) has `uses_gpu = True`. Read without making the backend, so that a run can pin the
    child processes observing with it to one GPU each before any of them opens CUDA. False for
    sim:CMD and for a factory that cannot be loaded (making the backend says why)."""
    if spec in REGISTERED:
        spec = REGISTERED[spec][0]
    elif spec.startswith(SIM_PREFIX) or not FACTORY_PATH.fullmatch(spec):
        return False
    try:
        return getattr(_load(spec), "uses_gpu", False) is True
    except (ImportError, AttributeError):
        return False


def _load(path: str):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
