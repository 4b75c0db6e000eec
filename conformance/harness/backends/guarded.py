"""A plugin backend (`package.module:factory`) behind a guard: whatever its code raises
(`SystemExit` included) and whatever it answers that is not one well-formed `Observation` per
case, in order, becomes an `error` of the cases concerned, naming what it did. The harness, not
the device under test, decides the verdicts, the exit status and whether the reports are written.

The guard is what a plugin gets in the harness's own process (`run --in-process`) and in the
supervisor's children (the default, `tcgen05_conformance.harness.supervisor`), where a plugin
that ends its process (`os._exit`) or crashes it costs the cases of its batch instead.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from tcgen05_conformance.core.inputs import MAX_JSON_DEPTH, parse_json, printable
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.core.state import MachineState
from tcgen05_conformance.harness.backends.base import ASSEMBLY, STATE, Observation, Progress
from tcgen05_conformance.harness.backends.registry import plugin_factory

DATA_NESTING = 4  # levels above a case's data in a journal record or a report
MAX_DETAIL = 300  # characters of a plugin's own text (an exception's message) quoted in a case's error


def what_it_raised(e: BaseException) -> str:
    """An exception from plugin code in one line: its type and message, cut at `MAX_DETAIL`."""
    if isinstance(e, SystemExit):
        return f"SystemExit({printable(repr(e.code))[:MAX_DETAIL]})"
    return f"{type(e).__name__}: {printable(' '.join(str(e).split()))[:MAX_DETAIL]}"


class GuardedBackend:
    """The backend a plugin factory makes, each call guarded; `broken` says why every case is an
    error (the factory raised or made no backend, `unavailable_reason` raised), None while it works."""

    def __init__(self, spec: str, profile: str | None):
        self.spec, self.broken, self._inner = spec, None, None
        self.name, self.observes = spec, STATE
        factory = plugin_factory(spec)  # ValueError when the spec names nothing loadable: bad usage, not the DUT
        try:
            made = factory(profile=profile)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - plugin code: charged to its cases
            self.broken = f"backend {spec}: its factory raised {what_it_raised(e)}"
            return
        self.broken = self._protocol_problem(made)
        if self.broken is None:
            self._inner = made

    def _protocol_problem(self, made: Any) -> str | None:
        """Why `made` is not a backend (None when it is), its name and what it observes read here once."""
        if isinstance(made, type):
            return f"backend {self.spec}: its factory returned the class {made.__name__}, not a backend made from it"
        try:
            name, observes = getattr(made, "name", None), getattr(made, "observes", STATE)
            methods = [a for a in ("unavailable_reason", "observe") if not callable(getattr(made, a, None))]
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - a property of plugin code raised
            return f"backend {self.spec}: reading its attributes raised {what_it_raised(e)}"
        if methods:
            return f"backend {self.spec}: its factory made a {type(made).__name__}, which lacks {', '.join(methods)}"
        if not isinstance(name, str) or not name:
            return f"backend {self.spec}: its name is {printable(repr(name))[:MAX_DETAIL]}, not a string"
        if observes not in (STATE, ASSEMBLY):
            return f"backend {self.spec}: it observes {printable(repr(observes))[:MAX_DETAIL]}, not {STATE!r} or {ASSEMBLY!r}"
        self.name, self.observes = name, observes
        return None

    def unavailable_reason(self) -> str | None:
        """The plugin's reason not to run here; None when it can run, or when it is broken (its
        cases are then errors, not skips): a raise or an answer that is not a string breaks it."""
        if self._inner is None:
            return None
        try:
            reason = self._inner.unavailable_reason()
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001
            self._break(f"backend {self.spec}: unavailable_reason() raised {what_it_raised(e)}")
            return None
        if reason is not None and not isinstance(reason, str):
            self._break(f"backend {self.spec}: unavailable_reason() returned a {type(reason).__name__}, not a string or None")
            return None
        return reason

    def _break(self, why: str) -> None:
        self.broken, self._inner = why, None

    def observe(self, programs: Sequence[Program], progress: Progress | None = None) -> list[Observation]:
        """One observation per program, in order: the plugin's where it gave a well-formed one, an
        error naming what it did otherwise."""
        if self._inner is None:
            return [Observation(p.case_id, error=self.broken) for p in programs]
        try:
            got = self._inner.observe(programs, progress)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001
            return [Observation(p.case_id, error=f"backend {self.spec} raised {what_it_raised(e)}") for p in programs]
        return checked_observations(self.spec, programs, got)


def checked_observations(spec: str, programs: Sequence[Program], got: Any) -> list[Observation]:
    """`got`, a plugin's answer for `programs`, where it is one well-formed observation per program
    in order; where it is not, an error for each case it does not answer well, saying why."""
    ids = [p.case_id for p in programs]
    if not isinstance(got, (list, tuple)):
        why = f"backend {spec}: observe() returned a {type(got).__name__}, not a list of observations"
        return [Observation(k, error=why) for k in ids]
    if len(got) != len(ids):
        why = f"backend {spec}: observe() returned {len(got)} observations for {len(ids)} cases"
        return [Observation(k, error=why) for k in ids]
    answered = [o.case_id if isinstance(o, Observation) else None for o in got]
    if all(isinstance(o, Observation) for o in got) and answered != ids and sorted(map(str, answered)) == sorted(ids):
        why = f"backend {spec}: observe() returned the cases' observations out of order"
        return [Observation(k, error=why) for k in ids]
    return [_checked(spec, k, o) for k, o in zip(ids, got)]


def _checked(spec: str, case_id: str, o: Any) -> Observation:
    """`o` if it is a well-formed observation of case `case_id`; an error of that case otherwise."""
    problem = observation_problem(o, case_id)
    return o if problem is None else Observation(case_id, error=f"backend {spec}: {problem}")


def observation_problem(o: Any, case_id: str) -> str | None:
    """Why `o` is not a well-formed observation of case `case_id` (None when it is): its type, its
    case id, exactly one of its four answers with the right type, and data that JSON can carry."""
    if not isinstance(o, Observation):
        return f"observe() answered case {case_id} with a {type(o).__name__}, not an Observation"
    if o.case_id != case_id:
        return f"observe() answered case {case_id} with an observation of case {printable(repr(o.case_id))[:80]}"
    given = [k for k in ("state", "assembled", "skip", "error") if getattr(o, k) is not None]
    if len(given) != 1:
        return f"the observation of case {case_id} holds {' and '.join(given) or 'none'} of state, assembled, skip and error"
    kind = given[0]
    value = getattr(o, kind)
    if kind == "state" and not _is_state(value):
        return f"the state of case {case_id} is not a MachineState of integer arrays"
    if kind == "assembled" and not isinstance(value, bool):
        return f"`assembled` of case {case_id} is a {type(value).__name__}, not a bool"
    if kind in ("skip", "error") and not isinstance(value, str):
        return f"the {kind} reason of case {case_id} is a {type(value).__name__}, not a string"
    if not isinstance(o.data, dict) or not _json_able(o.data):
        return f"the data of case {case_id} is not a JSON object (finite numbers, strings, lists, objects)"
    if kind == "assembled" and not _assembly_data(o.data):
        return (f"the data of case {case_id} is not an assembler's: `diagnostics` a list of objects with a string "
                "`message` (and `rule`), `note` and `log` strings")
    return None


def _assembly_data(data: dict) -> bool:
    """Whether an assembly observation's data has the form the judge reads (`judge.assembly_result`)."""
    diagnostics = data.get("diagnostics", [])
    return (isinstance(diagnostics, list)
            and all(isinstance(d, dict) and isinstance(d.get("message"), str) and isinstance(d.get("rule", ""), (str, type(None)))
                    for d in diagnostics)
            and all(isinstance(data.get(k, ""), str) for k in ("note", "log")))


def _is_state(state: Any) -> bool:
    if not isinstance(state, MachineState):
        return False
    arrays = [state.tmem, *state.loads] if isinstance(state.loads, list) else []
    if state.hopper_d is not None:
        arrays.append(state.hopper_d)
    return bool(arrays) and all(isinstance(a, np.ndarray) and a.dtype.kind in "iu" for a in arrays)


def _json_able(value: Any) -> bool:
    """Whether `value` is JSON text's to carry (finite numbers, strings, lists, string-keyed
    objects), nested shallowly enough for the readers of journals and reports to take it back."""
    try:
        parse_json(json.dumps(value, allow_nan=False), MAX_JSON_DEPTH - DATA_NESTING)
    except (TypeError, ValueError, RecursionError):  # InputError is a ValueError
        return False
    return True
