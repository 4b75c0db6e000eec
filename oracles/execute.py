"""Run a whole program through the oracle: the expected machine state after its operations.

Synchronisation and allocation operations (fence, wait, commit, alloc, dealloc, relinquish) do
not change the state the kernels read back; collector-buffer qualifiers are permissions only
(9.7.16.10) and never change a result.

`run_many` runs many programs at once: the tcgen05 operations of each are applied in turn, and
the Hopper MMAs of all of them (whose D is the state a Hopper program leaves) are evaluated
together by `numerics.evaluate`, in one vectorised call per input format; `run` is `run_many` of
one program.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Sequence

import numpy as np

from tcgen05_conformance.core.instructions import (
    Instruction,
    MmaSp,
    Tcgen05Alloc,
    Tcgen05Commit,
    Tcgen05Cp,
    Tcgen05Dealloc,
    Tcgen05Fence,
    Tcgen05Ld,
    Tcgen05Mma,
    Tcgen05RelinquishAllocPermit,
    Tcgen05Shift,
    Tcgen05St,
    Tcgen05Wait,
    WgmmaMma,
)
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState
from tcgen05_conformance.oracles import data_movement, hopper, mma, numerics
from tcgen05_conformance.oracles.numerics.matmul import MatrixProduct
from tcgen05_conformance.oracles.state import NotModelled, OracleState, UndefinedBehaviour, initial_state

#: Instruction types that leave the state the kernels read back as it is.
NO_STATE_CHANGE = (Tcgen05Alloc, Tcgen05Dealloc, Tcgen05RelinquishAllocPermit, Tcgen05Fence, Tcgen05Wait, Tcgen05Commit)


@singledispatch
def semantics(op: Instruction, state: OracleState, profile: str) -> MatrixProduct | None:
    """Apply `op` to `state`; a Hopper MMA returns the inner products of its D, which `run_many`
    evaluates. One registration per instruction type
    that changes the state; a type neither registered nor in NO_STATE_CHANGE is NotModelled."""
    if isinstance(op, NO_STATE_CHANGE):
        return None
    raise NotModelled(f"{op.OP} has no oracle semantics")


@semantics.register
def _(op: Tcgen05Mma, state: OracleState, profile: str) -> None:
    mma.execute(state, op, profile)


@semantics.register
def _(op: Tcgen05Cp, state: OracleState, profile: str) -> None:
    data_movement.cp(state, op)


@semantics.register
def _(op: Tcgen05Shift, state: OracleState, profile: str) -> None:
    data_movement.shift(state, op)


@semantics.register
def _(op: Tcgen05St, state: OracleState, profile: str) -> None:
    data_movement.st(state, op, data_movement.st_registers(op))


@semantics.register
def _(op: Tcgen05Ld, state: OracleState, profile: str) -> None:
    data_movement.ld(state, op)


@semantics.register
def _(op: WgmmaMma, state: OracleState, profile: str) -> MatrixProduct:
    return hopper.wgmma(state, op, profile)


@semantics.register
def _(op: MmaSp, state: OracleState, profile: str) -> MatrixProduct:
    return hopper.mma_sp(state, op, profile)


Outcome = MachineState | UndefinedBehaviour | NotModelled | ValueError


def run_many(programs: Sequence[Program], profile: str | None = None) -> list[Outcome]:
    """Per program, the expected state after it with numeric profile `profile` (default: the
    program's own), or the exception that stops it: UndefinedBehaviour (naming the operation),
    NotModelled, or ValueError (e.g. a profile with no datapath for its formats)."""
    outcomes: list[Outcome | None] = [None] * len(programs)
    states: dict[int, tuple[OracleState, MatrixProduct | None]] = {}
    for i, executed in enumerate(_execute(programs, profile)):
        if isinstance(executed, Exception):
            outcomes[i] = executed
        else:
            states[i] = executed
    with_products = [i for i, (_, product) in states.items() if product is not None]
    for i, d in zip(with_products, _evaluated([states[i][1] for i in with_products])):
        if isinstance(d, ValueError):
            outcomes[i] = d
            states.pop(i)
        else:
            states[i] = states[i][0], d
    for i, (state, d) in states.items():
        outcomes[i] = MachineState(state.tmem, state.loads, d)
    return outcomes


def matrix_products(programs: Sequence[Program], profile: str | None = None) -> list[MatrixProduct | None | Exception]:
    """Per program, the inner products its Hopper MMA leaves to evaluate (`run_many` evaluates
    them; a campaign hands them to the integer checker on the GPU instead), None when it has
    none, or the exception that stops it, as `run_many` gives it."""
    return [executed if isinstance(executed, Exception) else executed[1] for executed in _execute(programs, profile)]


def _execute(programs: Sequence[Program], profile: str | None) -> list[tuple[OracleState, MatrixProduct | None] | Exception]:
    """Every program's operations run on its initial state: the state and the matrix product of
    its last MMA with operands (not evaluated), or the exception that stopped it."""
    executed: list[tuple[OracleState, MatrixProduct | None] | Exception] = []
    for program in programs:
        state = initial_state(program)
        product = None
        try:
            for k, op in enumerate(program.ops):
                try:
                    product = semantics(op, state, profile or program.profile) or product
                except UndefinedBehaviour as e:
                    raise UndefinedBehaviour(f"ops[{k}] {op.OP}: {e}") from None
        except (UndefinedBehaviour, NotModelled, ValueError) as e:
            executed.append(e)
            continue
        executed.append((state, product))
    return executed


def _evaluated(products: list[MatrixProduct]) -> list[np.ndarray | ValueError]:
    """D of each product; where the products of one input format cannot be evaluated (a profile
    with no datapath for it), the ValueError, for each of them."""
    try:
        return numerics.evaluate(products)
    except ValueError:
        pass
    results: list[np.ndarray | ValueError] = []
    for product in products:
        try:
            results.append(numerics.evaluate([product])[0])
        except ValueError as e:
            results.append(e)
    return results


def run(program: Program, profile: str | None = None) -> MachineState:
    """The expected state after `program`, with numeric profile `profile` (default: the program's).
    Raises UndefinedBehaviour (naming the operation) or NotModelled: `run_many` of one program."""
    outcome = run_many([program], profile)[0]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome
