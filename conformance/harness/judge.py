"""The judge: what the harness concludes from backends' observations (the backends never judge).

One backend is the run's *reference* (`run --reference`, default `oracle`): its state of each case
is what every other backend's state must equal, bit for bit (`tcgen05_conformance.harness.diff`). Verdicts:

- the reference's own row keeps the oracle's meaning: `pass` when it gives a state, `skip` when
  it does not run the case (not modelled, unsupported), `error` when it cannot (undefined
  behaviour, a crash);
- a backend that observes states: `pass` when its state equals the reference's, `fail` with the
  decoded first mismatches in `data["diff"]` when not; a case the reference skips or errors on
  is skipped or errored for it too, naming the reference, and never run;
- a backend that observes assembly (`ptxas`): compared with the legality model
  (`tcgen05_conformance.core.legality.check`), not with the reference: a legal program must assemble,
  an illegal one fails naming the rule it breaks.

The numeric profile that judges each case is chosen here too, and only here (`profile_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcgen05_conformance.core.instructions import MmaSp
from tcgen05_conformance.core.isa.targets import TARGETS
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.numeric_profiles import DEFAULT_PROFILE
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.backends.base import ASSEMBLY, Observation
from tcgen05_conformance.harness.diff import diff_states
from tcgen05_conformance.oracles.numerics.profiles import for_instruction, get_profile, profile_target

PASS, FAIL, ERROR, SKIP = "pass", "fail", "error", "skip"


@dataclass
class CaseResult:
    """The verdict on one case for one backend."""

    case_id: str
    status: str
    detail: str = ""
    data: dict = field(default_factory=dict)


# --- the numeric profile of each case ----------------------------------------------------------

# The profile judging a program of an architecture (its target's SM generation) when the run asks
# for none of that architecture: Hopper by the measured H100 (reports/numerics-h100-silicon/h100-silicon.json);
# any other by the default profile, the exact model (sm_100a's fp6 / fp4 datapaths are assumed,
# docs/numerics.md).
DEFAULT_PROFILES = {9: "sm_90a"}


def generation(target: str) -> int:
    """The SM generation of a target: 9 for sm_90a (Hopper), 10 for sm_100a and sm_103a (Blackwell)."""
    return TARGETS[target].sm // 10


def profile_generation(profile: str) -> int | None:
    """The SM generation a profile models (a hardware profile is named after its target, and its
    instruction variants after it: `sm_90a.mma_sync` is Hopper's; a profile file after the target
    its provenance names); None for one that models no hardware (the exact model, a file that
    names no target), which may judge every program."""
    target = profile_target(profile)
    return None if target is None else generation(target)


def applies(profile: str, program: Program) -> bool:
    """Whether `profile` may judge `program`: it models no hardware, or the program's architecture."""
    return profile_generation(profile) in (None, generation(program.target))


def profile_for(program: Program, requested: str | None = None) -> str:
    """The profile that judges `program`: `requested` when it applies to the program's
    architecture; else the program's own when that is its architecture's hardware profile; else
    the architecture's default (`DEFAULT_PROFILES`, else DEFAULT_PROFILE). A program with a
    warp-level mma.sp gets the profile's mma.sync variant where one was measured (`sm_90a.mma_sync`)."""
    if requested is not None:
        get_profile(requested)  # ValueError: neither a profile's name nor a profile file
    own = program.profile if profile_generation(program.profile) is not None and applies(program.profile, program) else None
    chosen = next((p for p in (requested, own) if p is not None and applies(p, program)),
                  DEFAULT_PROFILES.get(generation(program.target), DEFAULT_PROFILE))
    if any(isinstance(op, MmaSp) for op in program.ops):
        return for_instruction(chosen, "mma_sync")
    return chosen


# --- verdicts -------------------------------------------------------------------------------------

REFERENCE_ROLE = "reference (pass: it gives a state)"
ASSEMBLY_ROLE = "assembled; compared with the legality model"


def role(observes: str, reference: str | None, is_reference: bool) -> str:
    """How a backend's verdicts are reached, for the reports."""
    if is_reference:
        return REFERENCE_ROLE
    if observes == ASSEMBLY:
        return ASSEMBLY_ROLE
    return f"state compared with the reference {reference}"


def reference_result(observed: Observation) -> CaseResult:
    """The reference's own verdict: pass when it gave a state (its digest in the data)."""
    if observed.state is not None:
        return CaseResult(observed.case_id, PASS, data={"digest": observed.state.digest(), **observed.data})
    return _not_observed(observed) or CaseResult(observed.case_id, ERROR, "the reference reported an assembly, not a state")


def state_result(program: Program, reference_name: str, reference: Observation, observed: Observation | None) -> CaseResult:
    """A state-observing backend's verdict on `program`, against the reference's observation
    (`observed` may be None only where the reference gave no state: the case is not run then)."""
    case = program.case_id
    if reference.state is None:
        why = reference.skip or reference.error or "it reported an assembly"
        return CaseResult(case, SKIP if reference.skip else ERROR, f"no reference state from {reference_name}: {why}")
    unobserved = _not_observed(observed)
    if unobserved:
        return unobserved
    if observed.state is None:
        return CaseResult(case, ERROR, "the backend reported an assembly, not a state", observed.data)
    try:
        diff = diff_states(program, reference.state, observed.state)
    except ValueError as e:
        return CaseResult(case, ERROR, f"the state does not fit the program: {e}", observed.data)
    if diff.mismatched:
        return CaseResult(case, FAIL, diff.summary_line(), data={"diff": diff.as_dict(), **observed.data})
    return CaseResult(case, PASS, data={"digest": observed.state.digest(), **observed.data})


def assembly_result(program: Program, backend_name: str, observed: Observation) -> CaseResult:
    """An assembler's verdict: the legality model's rules against what it accepted."""
    case = program.case_id
    violations = [str(v) for op in program.ops for v in check(op, program.target)]
    if violations:
        seen = (f"{backend_name} accepted it" if observed.assembled else f"{backend_name} rejected it"
                if observed.assembled is False else f"{backend_name}: {observed.skip or observed.error}")
        return CaseResult(case, FAIL, f"illegal program: {violations[0]}; {seen}", {"violations": violations})
    unobserved = _not_observed(observed)
    if unobserved:
        return unobserved
    if observed.assembled:
        data = dict(observed.data)
        return CaseResult(case, PASS, data.pop("note", ""), data)
    if observed.assembled is None:
        return CaseResult(case, ERROR, "the backend reported a state, not an assembly", observed.data)
    diagnostics = observed.data.get("diagnostics") or []
    first = diagnostics[0] if diagnostics else None
    rule = f" [{first['rule']}]" if first and first.get("rule") else ""
    message = first["message"] if first else observed.data.get("log", "")
    return CaseResult(case, FAIL, f"{backend_name} rejected it: {message}{rule}",
                      {"diagnostics": [d["message"] for d in diagnostics]})


def _not_observed(observed: Observation) -> CaseResult | None:
    """The skip or error an observation carries, as a verdict; None when it observed something."""
    if observed.skip is not None:
        return CaseResult(observed.case_id, SKIP, observed.skip, observed.data)
    if observed.error is not None:
        return CaseResult(observed.case_id, ERROR, observed.error, observed.data)
    return None
