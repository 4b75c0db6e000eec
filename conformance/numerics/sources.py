"""Vector sources for `numerics infer`: whatever turns chosen inner products into results.

A *vector source* evaluates batches of inner products ``d = sum_k a_k b_k + c`` (raw codes in,
raw accumulator codes out) for one instruction family and says which (input, accumulator)
format pairs it runs, with what K. `numerics infer` sends it directed feature tests and reads
the datapath off the answers. Implementations:

* `ModelSource` - a profile of the numeric model (`tcgen05_conformance.oracles.numerics`), for testing the inference:
  inferred from `sm_90a`, the profile must come back;
* `GpuSource` - silicon through the Hopper inner-product harness (`mma.sync` or `wgmma` batches,
  `tcgen05_conformance.numerics.measure`);
* `SimulatorSource` - a third-party numeric simulator speaking the line protocol of
  docs/numerics.md ("Numeric simulators");
* `RecordedVectors` is not a source that evaluates: the recorded folders hold fixed vectors, so
  `numerics infer` searches every datapath consistent with them instead (`infer_recorded`).

A backend can become a source by implementing `VectorSource` (the probe command of issue 18 is
meant to hand `numerics infer` its backend this way).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

import numpy as np

from tcgen05_conformance.core.formats import get_format, storage_dtype
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import Profile, get_profile, profile_target

#: Every (input, accumulator) pair the numeric model knows, floating point then integer.
FLOAT_PAIRS = (
    ("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("tf32", "f32"),
    *((f, acc) for f in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1") for acc in ("f32", "f16")),
)
INT_PAIRS = (("s8", "s32"), ("u8", "s32"))


@dataclass(frozen=True)
class Scaling:
    """Block scaling a source can run for an input format: scale format, elements per block, and
    the K of the inner products it scales."""

    scale_fmt: str
    block: int
    k: int


class SourceUnavailable(RuntimeError):
    """The source cannot run on this machine (no GPU, another architecture); the message says why."""


class VectorSource(Protocol):
    """What `numerics infer` needs from a source of inner-product results."""

    name: str  # how reports name it, e.g. "model:sm_90a", "gpu:wgmma"

    def provenance(self) -> dict[str, str]:
        """Where the results come from: source, GPU, driver, ... (strings)."""

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The (input, accumulator) format pairs it evaluates."""

    def unsupported(self) -> dict[str, str]:
        """Input formats it cannot run at all, with the reason."""

    def k(self, in_fmt: str, acc_fmt: str) -> int:
        """Products per inner product it evaluates for this pair."""

    def k_is_instruction(self) -> bool:
        """True when K is one instruction's (silicon, simulators): a fused group cannot be seen
        to span more; False for the model, whose K is free."""

    def instruction(self, in_fmt: str, acc_fmt: str) -> str:
        """The instruction that computes this pair (goes into the datapath's `instruction`)."""

    def scalings(self, in_fmt: str) -> tuple[Scaling, ...]:
        """The block scalings it runs with this input format (none: unscaled only)."""

    def evaluate(self, in_fmt: str, acc_fmt: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
                 a_scale: np.ndarray | None = None, b_scale: np.ndarray | None = None, scale_fmt: str = "ue8m0",
                 saturate: bool | None = None) -> np.ndarray:
        """Raw accumulator codes of a batch: a, b (n, K) raw input codes, c (n,) raw accumulator codes."""

    # Optional (a source without them has its mixed inputs left uninferred, `mixed_pairs_of`):
    #   mixed_pairs() -> ((A format, B format, accumulator), ...), the mixed fp8 pairs it evaluates;
    #   evaluate_mixed(a_fmt, b_fmt, acc_fmt, a, b, c) -> raw accumulator codes, K as for A's pair.


#: The mixed input pairs whose widening `numerics infer` asks about: fp8 through Hopper's mma.sync
#: and wgmma (PTX ISA 9.7.14.5.14, 9.7.15.5.2), whose e4m3 and e5m2 f16 holds exactly.
MIXED_FP8_PAIRS = (("e4m3", "e5m2"), ("e5m2", "e4m3"))


def mixed_pairs_of(source: VectorSource) -> tuple[tuple[str, str, str], ...]:
    """The mixed (A, B, accumulator) triples `source` evaluates: none when it cannot."""
    return tuple(source.mixed_pairs()) if hasattr(source, "mixed_pairs") else ()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _machine() -> str:
    return f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})"


#: K of one dense tcgen05.mma per input format (PTX ISA Table 39: kind::f16 16, kind::tf32 8,
#: kind::f8f6f4 and kind::i8 32).
INSTRUCTION_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "e3m2": 32, "e2m3": 32, "e2m1": 32,
                 "s8": 32, "u8": 32}


class ModelSource:
    """The numeric model under a profile: every pair the profile has a datapath for. Its K is
    free; it evaluates two instructions' worth (`INSTRUCTION_K` x `instructions`), so a fused
    group or step as long as one instruction shows its boundary."""

    def __init__(self, profile: str | Profile, instructions: int = 2):
        self.profile = get_profile(profile)
        self.spec = profile if isinstance(profile, str) else self.profile.name
        self.name = f"model:{self.spec}"
        self._instructions = instructions

    def provenance(self) -> dict[str, str]:
        target = profile_target(self.profile if not isinstance(self.spec, str) else self.spec)
        return {"source": self.name, "machine": _machine(), "date": _now(),
                "driver": f"the numeric model (tcgen05_conformance.oracles.numerics) under profile {self.profile.name}, "
                          f"K = {self._instructions} instructions' K", **({"target": target} if target else {})}

    def pairs(self) -> tuple[tuple[str, str], ...]:
        out = []
        for pair in FLOAT_PAIRS:
            try:
                self.profile.datapath(*pair)
            except ValueError:
                continue
            out.append(pair)
        return (*out, *INT_PAIRS)

    def unsupported(self) -> dict[str, str]:
        return dict(self.profile.unsupported)

    def k(self, in_fmt: str, acc_fmt: str) -> int:
        return INSTRUCTION_K[in_fmt] * self._instructions

    def k_is_instruction(self) -> bool:
        return False

    def instruction(self, in_fmt: str, acc_fmt: str) -> str:
        return f"numeric model, profile {self.profile.name}"

    def scalings(self, in_fmt: str) -> tuple[Scaling, ...]:
        # the block scalings of PTX ISA Tables 54-55: ue8m0 per 32 elements (mxf8f6f4 K = 32, mxf4 and
        # mxf4nvf4 K = 64), ue8m0 or ue4m3 per 16 (mxf4nvf4, fp4 only)
        if in_fmt in ("e4m3", "e5m2", "e3m2", "e2m3"):
            return (Scaling("ue8m0", 32, 32),)
        if in_fmt == "e2m1":
            return (Scaling("ue8m0", 32, 32), Scaling("ue8m0", 32, 64), Scaling("ue8m0", 16, 64), Scaling("ue4m3", 16, 64))
        return ()

    def evaluate(self, in_fmt, acc_fmt, a, b, c, *, a_scale=None, b_scale=None, scale_fmt="ue8m0", saturate=None):
        return inner_product(a, b, c, in_fmt, acc_fmt, self.profile, a_scale=a_scale, b_scale=b_scale,
                             scale_fmt=scale_fmt, saturate=saturate)

    def mixed_pairs(self) -> tuple[tuple[str, str, str], ...]:
        pairs = set(self.pairs())
        return tuple((a, b, acc) for a, b in MIXED_FP8_PAIRS for acc in ("f32", "f16")
                     if (a, acc) in pairs and (b, acc) in pairs)

    def evaluate_mixed(self, a_fmt, b_fmt, acc_fmt, a, b, c):
        return inner_product(a, b, c, (a_fmt, b_fmt), acc_fmt, self.profile)


#: GPU architectures each instruction family runs on.
FAMILY_ARCHS = {"mma.sync": ("sm_90",), "wgmma": ("sm_90",), "tcgen05": ("sm_100", "sm_103")}


class GpuSource:
    """Silicon through the shared inner-product harness of `tcgen05_conformance.numerics.measure`
    (`mma.sync` or `wgmma` on Hopper, `tcgen05.mma` on Blackwell): each inner product sits on the
    diagonal of one tile (D[m, m] = A[m] . B[m] + C[m, m]), the other elements are ignored. K is the
    instruction's. SourceUnavailable when this machine has no GPU of the family's architecture."""

    def __init__(self, family: str):
        from tcgen05_conformance.numerics import measure
        from tcgen05_conformance.device.launch import GpuUnavailable

        if family not in FAMILY_ARCHS:
            raise ValueError(f"gpu source family {family!r}: one of {', '.join(FAMILY_ARCHS)}")
        self.family = family
        self.name = f"gpu:{family}"
        try:
            self._runner = measure.VectorRunner()
        except GpuUnavailable as e:
            raise SourceUnavailable(str(e)) from None
        arch = self._runner.gpu.arch
        if arch not in FAMILY_ARCHS[family]:
            raise SourceUnavailable(f"{self._runner.gpu.name} is {arch}; {family} runs on {' / '.join(FAMILY_ARCHS[family])} only")
        if family == "tcgen05":
            combos = measure.tcgen05_combinations(f"{arch}a")
        else:
            combos = tuple(c for c in measure.COMBINATIONS if c.family == family)
        plain = [c for c in combos if c.form is None or not c.form.scale_fmt]
        self._combinations = {(c.in_fmt, c.acc): c for c in plain if not c.satfinite}
        self._satfinite = {(c.in_fmt, c.acc): c for c in plain if c.satfinite}
        self._scaled = {(c.in_fmt, c.form.scale_fmt, c.k // c.form.factors, c.k): c for c in combos
                        if c.form is not None and c.form.scale_fmt and not c.form.k96}
        self._mixed = {(c.in_fmt, c.b_fmt, c.acc): c for c in measure.MIXED_FP8 if c.family == family}

    def provenance(self) -> dict[str, str]:
        return {"source": self.name, **self._runner.describe(), "target": f"{self._runner.gpu.arch}a", "machine": _machine(),
                "date": _now()}

    def pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._combinations)

    def unsupported(self) -> dict[str, str]:
        if self.family == "tcgen05":
            return {}
        return {f: "Hopper has no fp6/fp4 tensor-core inputs (PTX ISA: .e2m3/.e3m2/.e2m1 need sm_100a+)"
                for f in ("e2m3", "e3m2", "e2m1")}

    def k(self, in_fmt: str, acc_fmt: str) -> int:
        return self._combinations[(in_fmt, acc_fmt)].k

    def k_is_instruction(self) -> bool:
        return True

    def instruction(self, in_fmt: str, acc_fmt: str) -> str:
        c = self._combinations[(in_fmt, acc_fmt)]
        kind = f".kind::{c.form.kind}" if c.form is not None else ""
        return f"{c.family}{kind} m{c.tile[0]}n{c.tile[1]}k{c.k} (inferred on silicon)"

    def scalings(self, in_fmt: str) -> tuple[Scaling, ...]:
        return tuple(Scaling(fmt, block, k) for (f, fmt, block, k) in self._scaled if f == in_fmt)

    def evaluate(self, in_fmt, acc_fmt, a, b, c, *, a_scale=None, b_scale=None, scale_fmt="ue8m0", saturate=None):
        if a_scale is not None:
            k = a.shape[1]
            combo = self._scaled[(in_fmt, scale_fmt, k // a_scale.shape[1], k)]
            return self._runner.run(combo, a, b, c, a_scale, b_scale)
        table = self._satfinite if saturate else self._combinations
        return self._runner.run(table[(in_fmt, acc_fmt)], a, b, c)

    def mixed_pairs(self) -> tuple[tuple[str, str, str], ...]:
        return tuple(self._mixed)

    def evaluate_mixed(self, a_fmt, b_fmt, acc_fmt, a, b, c):
        return self._runner.run(self._mixed[(a_fmt, b_fmt, acc_fmt)], a, b, c)


class SimulatorError(RuntimeError):
    """The simulator broke the line protocol or stopped; the message is one line."""


PROTOCOL = "tcgen05-conformance-numerics 1"
BLOCK = 1024  # requests per `sync`: their replies (about 12 bytes each) fit any pipe's buffer


class SimulatorSource:
    """A numeric simulator over the line protocol (docs/numerics.md, "Numeric simulators"): the
    command is started once, greeted, asked which pairs it runs, then sent one request line per
    inner product, in blocks closed by `sync`, and read one reply line per request and `ok`."""

    def __init__(self, command: str):
        self.command = command
        self.name = f"sim:{command}"
        self._child = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, bufsize=1)
        self._send(f"hello {PROTOCOL}")
        greeting = self._read()
        if not greeting.startswith("ok "):
            raise SimulatorError(f"{command}: expected 'ok NAME' after hello, got {greeting[:80]!r}")
        self.simulator = greeting[3:].strip()
        self._send("pairs")
        reply = self._read().split()
        if not reply or reply[0] != "pairs":
            raise SimulatorError(f"{command}: expected 'pairs IN->ACC ...', got {' '.join(reply)[:80]!r}")
        self._pairs = tuple(tuple(p.split("->")) for p in reply[1:])

    def _send(self, line: str) -> None:
        try:
            self._child.stdin.write(line + "\n")
        except (BrokenPipeError, OSError):
            raise SimulatorError(f"{self.command}: the simulator exited ({self._child.poll()})") from None

    def _read(self) -> str:
        try:
            self._child.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SimulatorError(f"{self.command}: the simulator exited ({self._child.poll()})") from None
        line = self._child.stdout.readline()
        if not line:
            raise SimulatorError(f"{self.command}: the simulator exited without replying ({self._child.poll()})")
        return line.strip()

    def close(self) -> None:
        if self._child.poll() is None:
            self._child.stdin.close()
            try:
                self._child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()

    def provenance(self) -> dict[str, str]:
        return {"source": self.name, "simulator": self.simulator, "machine": _machine(), "date": _now(),
                "driver": f"line protocol '{PROTOCOL}'"}

    def pairs(self) -> tuple[tuple[str, str], ...]:
        return self._pairs

    def unsupported(self) -> dict[str, str]:
        return {}

    def k(self, in_fmt: str, acc_fmt: str) -> int:
        return INSTRUCTION_K[in_fmt]

    def k_is_instruction(self) -> bool:
        return True

    def instruction(self, in_fmt: str, acc_fmt: str) -> str:
        return f"simulator {self.simulator}"

    def scalings(self, in_fmt: str) -> tuple[Scaling, ...]:
        return ()

    def evaluate(self, in_fmt, acc_fmt, a, b, c, *, a_scale=None, b_scale=None, scale_fmt="ue8m0", saturate=None,
                 refused: dict[int, str] | None = None):
        """As every source's; `refused` collects the requests the simulator answered with an error
        (else the first stops the batch, `simulate`)."""
        if a_scale is not None:
            raise ValueError(f"{self.name}: the line protocol carries no block scales")
        return simulate(self._send, self._read, in_fmt, acc_fmt, a, b, c, refused)


def request_line(in_fmt: str, acc_fmt: str, a_row: np.ndarray, b_row: np.ndarray, c_code: int) -> str:
    """One request: `ip IN ACC A B C` with A, B comma-separated hex codes and C a hex code."""
    hexes = lambda row: ",".join(f"{int(x):x}" for x in row)  # noqa: E731
    return f"ip {in_fmt} {acc_fmt} {hexes(a_row)} {hexes(b_row)} {int(c_code):x}"


def simulate(send, read, in_fmt: str, acc_fmt: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
             refused: dict[int, str] | None = None) -> np.ndarray:
    """Results of a batch over the line protocol: blocks of BLOCK requests, each closed by `sync`,
    whose `ok` follows the block's replies (small enough that no pipe fills: a simulator may
    answer each line at once, or - like an Octave batch - only at `sync`). A request the simulator
    answers with `error MESSAGE` goes into `refused` (index -> message; its result is 0), or, when
    `refused` is None, stops the batch with SimulatorError once the block has been read."""
    dtype = storage_dtype(get_format(acc_fmt))
    unsigned = np.dtype(dtype.str.replace("i", "u"))
    a = np.asarray(a).astype(storage_dtype(get_format(in_fmt)).str.replace("i", "u"))
    b = np.asarray(b).astype(a.dtype)
    c = np.asarray(c).astype(unsigned) if np.asarray(c).dtype.kind == "u" else np.asarray(c).astype(dtype).view(unsigned)
    out = np.zeros(len(c), dtype=unsigned)
    top = np.iinfo(unsigned).max
    errors = {} if refused is None else refused
    for lo in range(0, len(c), BLOCK):
        hi = min(lo + BLOCK, len(c))
        for i in range(lo, hi):
            send(request_line(in_fmt, acc_fmt, a[i], b[i], c[i]))
        send("sync")
        for i in range(lo, hi):
            reply = read().split(maxsplit=1)
            if reply[:1] == ["error"]:
                errors[i] = " ".join(reply[1:])[:200]
                continue
            if len(reply) != 2 or reply[0] != "d":
                raise SimulatorError(f"request {i + 1}: expected 'd HEX' or 'error MESSAGE', got {' '.join(reply)[:120]!r}")
            try:
                code = int(reply[1], 16)
            except ValueError:
                raise SimulatorError(f"request {i + 1}: {reply[1][:20]!r} is not a hexadecimal code") from None
            if not 0 <= code <= top:
                raise SimulatorError(f"request {i + 1}: {reply[1][:20]} does not fit a {acc_fmt} code")
            out[i] = code
        done = read()
        if done != "ok":
            raise SimulatorError(f"expected 'ok' after the replies to a block, got {done[:80]!r}")
        if refused is None and errors:
            first = min(errors)
            raise SimulatorError(f"request {first + 1} ({in_fmt} -> {acc_fmt}): the simulator answered error {errors[first]!r}")
    return out.view(dtype)


def command_line(argv: list[str] | None = None) -> str:
    """The command line a report records."""
    return " ".join(["tcgen05-conformance", *(argv if argv is not None else sys.argv[1:])])
