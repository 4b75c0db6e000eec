"""The conformance cases of a pytest session on one backend (`tcgen05_conformance.harness.pytest_plugin` sets it
up): a collector of one item per distinct case id, and the verdicts, judged against the reference
(`tcgen05_conformance.harness.runner.execute`) in batches as pytest reaches them and reported one case at
a time."""

from __future__ import annotations

import re
from typing import Sequence

import pytest

from tcgen05_conformance.core.program import Program
from tcgen05_conformance.harness.judge import ERROR, FAIL, PASS, SKIP, CaseResult
from tcgen05_conformance.harness.supervisor import DEFAULT_BATCH_SIZE


class Suite:
    """The session's cases on one backend: their items, and their verdicts as batches produce them."""

    def __init__(self, spec: str, name: str, reference: str, examples: int, seed: int, profile: str | None,
                 timeout_s: float | None, in_process: bool = False):
        self.spec, self.name, self.reference, self.examples, self.seed = spec, name, reference, examples, seed
        self.profile, self.timeout_s, self.in_process = profile, timeout_s, in_process
        self.results: dict[str, CaseResult] = {}
        self.order: dict[str, int] = {}  # case id -> position among the cases the session runs
        self.queue: list[Program] = []
        self.observers: dict = {}  # the backends made, by spec, kept from batch to batch

    def pytest_report_header(self) -> str:
        return (f"tcgen05-conformance: backend {self.spec}, reference {self.reference}, {self.examples} examples, "
                f"seed {self.seed}, profile {self.profile or 'each architecture its own'}"
                + (f", timeout {self.timeout_s:g} s" if self.timeout_s else ""))

    @pytest.hookimpl(tryfirst=True)  # before -k / -m deselection, so that those select cases too
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        items.extend(session.genitems(Cases.from_parent(session, name="tcgen05", nodeid="tcgen05", suite=self)))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.queue = [item.program for item in session.items if isinstance(item, CaseItem)]
        self.order = {p.case_id: k for k, p in enumerate(self.queue)}

    def result(self, program: Program) -> CaseResult:
        """The case's result, running the batch it starts (it and the next cases the session runs
        that have none yet) when it has none."""
        if program.case_id not in self.results:
            start = self.order.get(program.case_id)
            following = self.queue[start + 1:] if start is not None else []
            batch = [program] + [p for p in following if p.case_id not in self.results][:DEFAULT_BATCH_SIZE - 1]
            self.results.update((r.case_id, r) for r in self._run(batch))
        return self.results[program.case_id]

    def _run(self, programs: Sequence[Program]) -> list[CaseResult]:
        """One verdict per program (a plugin's misbehaviour is charged to its cases: `runner.Observer`)."""
        from tcgen05_conformance.harness.runner import execute

        outcome = execute(list(programs), [self.spec], self.profile, reference=self.reference, timeout_s=self.timeout_s,
                          batch_size=max(1, len(programs)), observers=self.observers, in_process=self.in_process)
        return outcome.results[self.spec]

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Exit status 5, as `run`'s when nothing ran, where the backend skipped every case the
        session reached (the reference's skips included) and pytest would exit 0."""
        ran = list(self.results.values())
        if exitstatus == pytest.ExitCode.OK and ran and all(r.status == SKIP for r in ran):
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


class Cases(pytest.Collector):
    """The generated programs, one item per distinct case id, in generation order."""

    def __init__(self, *, suite: Suite, **kwargs):
        super().__init__(**kwargs)
        self.suite = suite

    def collect(self) -> list[CaseItem]:
        from tcgen05_conformance.harness.runner import generate_programs

        programs = {p.case_id: p for p in generate_programs(self.suite.examples, self.suite.seed)}
        backend = re.split(r"[:\s]", self.suite.name, maxsplit=1)[0]  # `sim:CMD` is named by its command
        names = {p.case_id: f"tcgen05[{backend}-{p.label}-{p.case_id}]" for p in programs.values()}
        return [CaseItem.from_parent(self, name=names[k], nodeid=names[k], suite=self.suite, program=p) for k, p in programs.items()]


class CaseItem(pytest.Item):
    """One program on the suite's backend; an `error` result fails its setup, so pytest reports an error."""

    def __init__(self, *, suite: Suite, program: Program, **kwargs):
        super().__init__(**kwargs)
        self.suite, self.program = suite, program
        self.user_properties += [("case_id", program.case_id), ("label", program.label), ("seed", suite.seed)]

    def setup(self) -> None:
        r = self.suite.result(self.program)
        if r.status == ERROR:
            pytest.fail(message(r), pytrace=False)

    def runtest(self) -> None:
        r = self.suite.result(self.program)
        if r.status == SKIP:
            pytest.skip(r.detail or "skipped by the backend")
        elif r.status != PASS:
            pytest.fail(message(r) if r.status == FAIL else f"unknown status {r.status!r}: {r.detail}", pytrace=False)

    def reportinfo(self) -> tuple[str, None, str]:
        return str(self.path), None, self.name


def message(r: CaseResult) -> str:
    """The case's detail, then its diff's first mismatch decoded (`tcgen05_conformance.harness.diff`) unless the
    detail already says it; a diff not in that form is shown as it is."""
    from tcgen05_conformance.harness.diff import Diff, Mismatch

    diff = r.data.get("diff")
    if not diff:
        return r.detail or r.status
    try:
        line = Diff(diff["words"], diff["mismatched"], tuple(Mismatch(**m) for m in diff["first"])).summary_line()
    except (KeyError, TypeError):
        line = f"diff: {diff}"
    return r.detail if line in r.detail else "\n".join(filter(None, [r.detail, line]))
