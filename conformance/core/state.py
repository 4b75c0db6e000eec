"""The machine state a program leaves behind, as every implementation reports it: each CTA's
Tensor Memory image (128 lanes x the allocated columns of 32-bit cells, PTX ISA 9.7.16.1), the
registers each `tcgen05.ld` returns, and D of a Hopper program (wgmma, mma.sp).

The oracle computes one, the device backends read one back, a simulator writes one to files;
the runner diffs two of them (`tcgen05_conformance.harness.diff`). The shape of each part follows from
the program alone (`state_shape`), as does the state it starts from (`initial_tmem`,
`initial_smem`); `state_to_json` / `state_from_json` carry a state between processes. The two
exceptions name why a state cannot be given for a program at all.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.instructions import MmaSp, Tcgen05Ld, WgmmaMma
from tcgen05_conformance.core.isa import data_movement as dm
from tcgen05_conformance.core.isa import hopper as hopper_isa
from tcgen05_conformance.core.program import SMEM_BYTES, Program


class UndefinedBehaviour(ValueError):
    """The program does something whose result the ISA leaves undefined (named in the message)."""


class NotModelled(ValueError):
    """The implementation has no semantics for this operation or form yet (named in the message)."""


@dataclass
class MachineState:
    """Every CTA's TMEM image (uint32 [ctas, 128, columns], all allocated columns), the registers
    of each tcgen05.ld in program order (uint32 [threads, registers]), and a Hopper program's D
    (uint32 [rows, columns]; 16-bit types in the low half), None for tcgen05 programs."""

    tmem: np.ndarray
    loads: list[np.ndarray]
    hopper_d: np.ndarray | None = None

    def digest(self) -> str:
        """SHA-256 of the state, for trend tracking and cross-run comparison."""
        h = hashlib.sha256(self.tmem.tobytes())
        for words in self.loads:
            h.update(words.tobytes())
        if self.hopper_d is not None:
            h.update(self.hopper_d.tobytes())
        return h.hexdigest()

    def __reduce__(self):
        """Pickled with an all-zero TMEM image as its shape and dtype alone: a Hopper program's
        state holds its untouched allocation (128 x 512 words, 256 KiB of zeros), which made up
        nine tenths of a campaign's spool files; it unpickles as an equal, writable array."""
        tmem = self.tmem
        if type(tmem) is np.ndarray and tmem.flags.c_contiguous and not tmem.any():
            return _with_zero_tmem, (tmem.shape, tmem.dtype.str, self.loads, self.hopper_d)
        return MachineState, (tmem, self.loads, self.hopper_d)


def _with_zero_tmem(shape: tuple[int, ...], dtype: str, loads: list[np.ndarray], hopper_d: np.ndarray | None) -> MachineState:
    """A state whose TMEM image is all zero (how `MachineState.__reduce__` pickles one)."""
    return MachineState(np.zeros(shape, dtype), loads, hopper_d)


@dataclass(frozen=True)
class StateShape:
    """The shape of each part of a program's final state: `tmem` [ctas, 128, columns], one
    [threads, registers] per tcgen05.ld with the index of its op in `program.ops`, and Hopper D
    [rows, columns] (None for programs without a Hopper MMA)."""

    tmem: tuple[int, int, int]
    loads: tuple[tuple[int, tuple[int, int]], ...]
    hopper_d: tuple[int, int] | None


WARP_THREADS = 32  # a tcgen05.ld returns the registers of one warp (9.7.16.8.3)


def ld_registers(op: Tcgen05Ld) -> int:
    """Registers per thread of a tcgen05.ld: Table 47 / 48's count for its shape and .num, and
    with .red one more, the thread's reduced value (9.7.16.8.3)."""
    return dm.LDST_SHAPES[op.shape].regs_per_num * op.num + (op.red_op is not None)


def state_shape(program: Program) -> StateShape:
    """What every implementation's final state of `program` looks like: the whole allocated TMEM
    of each CTA, the registers of each tcgen05.ld, and D of its last Hopper MMA (wgmma: 64 x N,
    9.7.15.5; mma.sp: 16 x 8, 9.7.14.6.3)."""
    loads = tuple((k, (WARP_THREADS, ld_registers(op))) for k, op in enumerate(program.ops) if isinstance(op, Tcgen05Ld))
    hopper_d = None
    for op in program.ops:
        if isinstance(op, WgmmaMma):
            hopper_d = (hopper_isa.WGMMA_M, op.n)
        elif isinstance(op, MmaSp):
            hopper_d = (hopper_isa.MMA_SP_M, hopper_isa.MMA_SP_N)
    return StateShape((program.ctas, dm.TMEM_LANES, program.tmem_columns), loads, hopper_d)


def initial_tmem(program: Program) -> np.ndarray:
    """Each CTA's TMEM image before the first operation (uint32 [ctas, 128, columns]): the
    program's regions, 0 elsewhere."""
    tmem = np.zeros((program.ctas, dm.TMEM_LANES, program.tmem_columns), dtype=np.uint32)
    for region in program.tmem:
        words = np.frombuffer(region.words, dtype="<u4").reshape(region.lanes, region.columns)
        tmem[region.cta, region.lane:region.lane + region.lanes, region.column:region.column + region.columns] = words
    return tmem


def initial_smem(program: Program) -> tuple[np.ndarray, np.ndarray]:
    """Each CTA's shared memory before the first operation: (bytes uint8 [ctas, SMEM_BYTES], which
    of them the program initialises bool [ctas, SMEM_BYTES]); the other bytes read 0 here but
    have no defined value."""
    smem = np.zeros((program.ctas, SMEM_BYTES), dtype=np.uint8)
    defined = np.zeros((program.ctas, SMEM_BYTES), dtype=bool)
    for segment in program.smem:
        end = segment.offset + len(segment.data)
        smem[segment.cta, segment.offset:end] = np.frombuffer(segment.data, dtype=np.uint8)
        defined[segment.cta, segment.offset:end] = True
    return smem, defined


def _words_to_json(words: np.ndarray) -> dict:
    words = np.asarray(words)
    return {"shape": list(words.shape), "base64": base64.b64encode(np.ascontiguousarray(words, dtype="<u4").tobytes()).decode("ascii")}


def _words_from_json(obj: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(obj["base64"]), dtype="<u4").reshape(obj["shape"]).astype(np.uint32)


def state_to_json(state: MachineState) -> dict:
    """The state as a JSON-able dict: each array as its shape and the base64 of its little-endian
    words (what `state_from_json` reads back)."""
    return {"tmem": _words_to_json(state.tmem), "loads": [_words_to_json(w) for w in state.loads],
            "hopper_d": None if state.hopper_d is None else _words_to_json(state.hopper_d)}


def state_from_json(obj: dict) -> MachineState:
    """The state `state_to_json` wrote; KeyError, ValueError or TypeError when `obj` is not one."""
    return MachineState(_words_from_json(obj["tmem"]), [_words_from_json(w) for w in obj["loads"]],
                        None if obj["hopper_d"] is None else _words_from_json(obj["hopper_d"]))
