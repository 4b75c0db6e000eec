"""The conformance suite inside another project's pytest session, run against that project's
backend, one test per case id:

    pytest --tcgen05-backend BACKEND [--tcgen05-reference R] --tcgen05-examples N [--tcgen05-seed S]
           [--tcgen05-profile P] [--tcgen05-timeout S] [--tcgen05-in-process]

BACKEND and R are anything `tcgen05-conformance run --backend` takes (a registered name, sim:CMD
or `package.module:factory`); BACKEND's observations are judged against R's (default `oracle`)
as `run --reference` judges them. The programs are those `run` generates from the same example
count and seed, one test per distinct case id, named `tcgen05[<backend name>-<label>-<case id>]`.
Cases run in batches (one `observe` call per backend each, or with `--tcgen05-timeout` one
watched child process each, as in `run --timeout`), a batch starting when pytest reaches its
first case, and each case is reported on its own: pass, fail (the verdict's detail, and the first
mismatch of its diff decoded), skip, or error (reported as an error in setup). As `run`: the same
usage errors, a plugin isolated in children unless `--tcgen05-in-process`, and exit status 5
(nothing ran) when BACKEND skipped every case it reached (e.g. `blackwell` without its GPU), where
the session would otherwise exit 0. Without `--tcgen05-backend` the
plugin does nothing, and costs nothing more than its options: the suite (`tcgen05_conformance.harness.pytest_suite`)
is imported only then. Registered through the `pytest11` entry point `tcgen05-conformance`.
"""

from __future__ import annotations

import pytest

from tcgen05_conformance.core.inputs import MAX_EXAMPLES, MAX_SEED, MAX_TIMEOUT_S
from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tcgen05", "tcgen05-conformance suite (inert unless --tcgen05-backend is given)")
    group.addoption("--tcgen05-backend", metavar="BACKEND",
                    help="run the tcgen05 conformance suite on BACKEND: what `tcgen05-conformance run --backend` takes "
                         "(oracle, ptxas, ..., sim:CMD, MODULE:FACTORY)")
    group.addoption("--tcgen05-reference", metavar="BACKEND",
                    help="the backend whose states BACKEND's must equal, as `tcgen05-conformance run --reference` "
                         "(default: the oracle; with BACKEND itself: pass when it gives a state)")
    group.addoption("--tcgen05-examples", type=int, default=200, metavar="N",
                    help="programs to generate, one test per distinct case id (default 200)")
    group.addoption("--tcgen05-seed", type=int, default=0, metavar="S", help="generation seed (default 0)")
    group.addoption("--tcgen05-profile", metavar="PROFILE",
                    help=f"numeric profile judging the programs of the architecture it is for, as `run --profile`: "
                         f"{', '.join(PROFILE_NAMES)} or a profile file written by `tcgen05-conformance numerics infer "
                         "--out` (default: each program its architecture's own)")
    group.addoption("--tcgen05-timeout", type=float, metavar="S",
                    help="run each batch in a child process killed after S seconds, as `run --timeout` does "
                         "(default: registered backends in this process, plugins in children without a watchdog)")
    group.addoption("--tcgen05-in-process", action="store_true",
                    help="run a plugin backend (MODULE:FACTORY) in the pytest process, as `run --in-process` "
                         "(default: in watched child processes, so that whatever it does costs its cases only)")


def pytest_configure(config: pytest.Config) -> None:
    spec = config.getoption("tcgen05_backend")
    if spec is None:
        return
    examples, timeout_s = config.getoption("tcgen05_examples"), config.getoption("tcgen05_timeout")
    if examples < 1:
        raise pytest.UsageError(f"--tcgen05-examples must be at least 1 (got {examples})")
    if examples > MAX_EXAMPLES:
        raise pytest.UsageError(f"--tcgen05-examples must be at most {MAX_EXAMPLES} (got {examples})")
    if not 0 <= config.getoption("tcgen05_seed") <= MAX_SEED:
        raise pytest.UsageError(f"--tcgen05-seed must be in [0, {MAX_SEED}] (got {config.getoption('tcgen05_seed')})")
    if timeout_s is not None and not timeout_s > 0:
        raise pytest.UsageError(f"--tcgen05-timeout must be positive (got {timeout_s})")
    if timeout_s is not None and timeout_s > MAX_TIMEOUT_S:
        raise pytest.UsageError(f"--tcgen05-timeout must be at most {MAX_TIMEOUT_S:g} (got {timeout_s})")
    profile = config.getoption("tcgen05_profile")
    if profile is not None:
        from tcgen05_conformance.oracles.numerics.profiles import get_profile

        try:
            get_profile(profile)
        except ValueError as e:
            raise pytest.UsageError(f"--tcgen05-profile: {e}") from None
    from tcgen05_conformance.harness.backends.base import STATE
    from tcgen05_conformance.harness.backends.registry import DEFAULT_REFERENCE, SpecError, spec_problem
    from tcgen05_conformance.harness.pytest_suite import Suite
    from tcgen05_conformance.harness.runner import Observer

    profile, reference = config.getoption("tcgen05_profile"), config.getoption("tcgen05_reference") or DEFAULT_REFERENCE
    in_process = config.getoption("tcgen05_in_process")
    facts = {}
    for option, name in (("--tcgen05-backend", spec), ("--tcgen05-reference", reference)):
        problem = spec_problem(name)  # as `run` refuses it while parsing: a sim:CMD whose command is missing too
        if problem:
            raise pytest.UsageError(f"{option}: {problem}")
        try:  # a plugin's facts are asked of a child unless --tcgen05-in-process: its misbehaviour costs its cases
            facts[option] = Observer(name, timeout_s, in_process=in_process).facts(profile)
        except SpecError as e:
            raise pytest.UsageError(f"{option}: {e}") from None
    if facts["--tcgen05-reference"].observes != STATE:
        raise pytest.UsageError(f"--tcgen05-reference: {reference} observes {facts['--tcgen05-reference'].observes}, not "
                                "machine states: it cannot be the reference")
    suite = Suite(spec, facts["--tcgen05-backend"].name, reference, examples, config.getoption("tcgen05_seed"), profile,
                  timeout_s, in_process)
    config.pluginmanager.register(suite, "tcgen05-conformance-suite")
