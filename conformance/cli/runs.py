"""`run`, `replay` and `export`: programs drawn from a seed (or read from a file), observed by
backends, judged against the reference and reported; or written with the reference's states as
the expected ones, for simulators."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tcgen05_conformance.cli.common import (
    EXIT_COVERAGE_MISSED,
    EXIT_FAILED,
    EXIT_NOTHING_RAN,
    EXIT_OK,
    EXIT_STATUSES,
    JOBS_LIMIT,
    MAX_EXAMPLES,
    PROG,
    NothingRan,
    UsageError,
    backend_spec,
    deprecated_spelling,
    PROFILE_FILE_HELP,
    command_line,
    count,
    coverage_missed_line,
    query,
    examples,
    gpus,
    profile_spec,
    seconds,
    seed,
    shard,
    visible_gpus,
)
from tcgen05_conformance.core.inputs import printable
from tcgen05_conformance.core.numeric_profiles import PROFILE_NAMES
from tcgen05_conformance.harness.backends.registry import BACKENDS, DEFAULT_BACKENDS, DEFAULT_REFERENCE, REGISTERED, uses_gpu
from tcgen05_conformance.harness.journal import Journal
from tcgen05_conformance.harness.selection import KEYS
from tcgen05_conformance.cli.suite import suite_version
from tcgen05_conformance.harness.supervisor import DEFAULT_BATCH_SIZE

BACKEND_HELP = ("a registered backend (" + "; ".join(f"{name}: {what}" for name, (_, what) in REGISTERED.items())
                + "), a simulator as sim:CMD (docs/simulators.md), or a plugin's factory as MODULE:FACTORY")
REFERENCE_HELP = (f"the backend whose states every other backend's must equal, observing each case once: any backend spec "
                  f"that observes states (default {DEFAULT_REFERENCE}; its own row: pass when it gives a state)")
PROFILE_HELP = ("numeric profile judging the programs of the architecture it is for (exact: every program); other programs, "
                "and all by default, are judged by their architecture's own (Hopper: sm_90a, mma.sp sm_90a.mma_sync; "
                "Blackwell: exact): a profile name (" + ", ".join(PROFILE_NAMES) + ") " + PROFILE_FILE_HELP
                + ", which judges the programs of the target it names, or every program when it names none")
SUITE_HELP = ("run exactly the frozen case list of suite VERSION (e.g. 1.0; `suite` names it): its programs, drawn "
              "again from its seed and count (leave --count and --seed as they are), judged against the oracle; "
              "`suite check` then says whether the run passes it")
SELECT_HELP = ("keep the cases matching QUERY, KEY=VALUE[,KEY=VALUE...], every term of it: " + "; ".join(
    f"{key}: {what}" for key, what in KEYS.items()) + ". A VALUE is a pattern (*, ?, [...]), e.g. family=tcgen05.*,kind=f16 "
               "(repeatable: the cases matching any query; docs/cli.md)")


def add(sub) -> None:
    add_run(sub)
    add_replay(sub)
    add_export(sub)


def add_run(sub) -> None:
    run = sub.add_parser("run", help="generate programs, have backends observe them, judge against the reference and report",
                         epilog=f"{EXIT_STATUSES}, {EXIT_COVERAGE_MISSED} with --require-coverage when every case passed but a "
                                f"reachable value coverpoint was missed, {EXIT_NOTHING_RAN} when nothing was compared: every "
                                "backend under test (each one but the reference) skipped every case, e.g. --backend blackwell "
                                "without a Blackwell GPU (as pytest's 5, no test ran)")
    run.add_argument("--backend", action="append", type=backend_spec, metavar="NAME",
                     help=f"a backend to run: {BACKEND_HELP} (repeatable; default: {', '.join(DEFAULT_BACKENDS)})")
    run.add_argument("--reference", type=backend_spec, default=DEFAULT_REFERENCE, metavar="NAME", help=REFERENCE_HELP)
    deprecated_spelling(run, "--examples", run.add_argument(
        "--count", dest="examples", type=examples, default=200, metavar="N",
        help=f"programs to draw, 1 to {MAX_EXAMPLES:,} (default 200; before 1.0 --examples)"))
    run.add_argument("--seed", type=seed, default=0, help="generation seed, 0 to 2^32 - 1 (default 0)")
    run.add_argument("--profile", type=profile_spec, metavar="PROFILE", help=PROFILE_HELP)
    deprecated_spelling(run, "--report-dir", run.add_argument(
        "--out", dest="report_dir", default="out", metavar="DIR",
        help="where summary.json and the reports go (default out/): created, checked and locked against another run "
             "before the first program is drawn; written atomically (before 1.0 --report-dir)"))
    run.add_argument("--journal", metavar="FILE",
                     help="append each case result to FILE as it completes; if FILE exists, resume: its cases are not "
                          "run again (refused if FILE was written with another seed, examples, backends, reference or profile)")
    run.add_argument("--timeout", type=seconds, metavar="S",
                     help="run each backend in child processes, one per batch of cases, killing a child still running "
                          "after S seconds (its start included); the case a killed or crashed child was running is "
                          "retried alone and, if it fails alone too, reported as an error (default: in this process)")
    run.add_argument("--batch-size", type=count(1, MAX_EXAMPLES, "batch size"), metavar="N",
                     help=f"cases per child process with --timeout, --jobs or more than one GPU (default {DEFAULT_BATCH_SIZE}, "
                          "with --jobs or GPUs at most an even share of the cases)")
    run.add_argument("--shard", type=shard, metavar="I/N",
                     help="run shard I of N: every shard draws the run's programs and keeps the cases whose id modulo N "
                          "is I - 1, so N shards (CI jobs, machines) together run the whole run; their report folders "
                          "combine with `report merge` (each also holds results.json for it)")
    run.add_argument("--jobs", type=count(1, JOBS_LIMIT, "job count"), default=1, metavar="N",
                     help="run up to N batches of cases at once, each in a child process as with --timeout (with no "
                          "watchdog unless --timeout is given); the results are the same as with one job "
                          "(default 1: in this process)")
    run.add_argument("--gpus", type=gpus, metavar="N|all",
                     help="GPUs for the backends that run on one (hopper, blackwell, or a plugin whose factory has "
                          "uses_gpu = True): the first N that CUDA_VISIBLE_DEVICES leaves visible, or all of them "
                          "(default all). With more than one, such a backend runs its batches of cases in child "
                          "processes as with --jobs, one per GPU at a time, each seeing its GPU alone, so a crash (or, with "
                          "--timeout, a hang) costs the case that caused it while the other GPUs go on (--jobs is then for "
                          "the other backends); the results are the same as on one GPU, and summary.json "
                          "lists the GPUs. With one GPU, or none, such a backend runs as it always has")
    run.add_argument("--in-process", action="store_true",
                     help="run plugin backends (MODULE:FACTORY) in this process, as the registered ones run, instead of in "
                          "watched child processes (the default, as with --timeout without its watchdog): faster, but a "
                          "plugin that ends or crashes the process (os._exit, a segfault) then ends the run without its "
                          "reports; what it raises or answers wrong is still charged to its cases")
    run.add_argument("--select", action="append", type=query, metavar="QUERY", help=SELECT_HELP)
    run.add_argument("--suite", type=suite_version, metavar="VERSION", help=SUITE_HELP)
    run.add_argument("--require-coverage", action="store_true",
                     help=f"exit {EXIT_COVERAGE_MISSED} when every case passed but a reachable value coverpoint was missed "
                          "(docs/reports.md, value coverage; for shards, give it to report merge)")
    run.set_defaults(func=cmd_run)


FAILURES_PRINTED = 5  # failures the console lists (the reports list them all)


def cmd_run(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness import runner
    from tcgen05_conformance.harness.report import ReportDir, ReportDirError

    started = time.perf_counter()
    backends = args.backend or list(DEFAULT_BACKENDS)
    gpus = _gpus_for(args, [*backends, args.reference])
    if args.batch_size is not None and args.timeout is None and args.jobs == 1 and len(gpus) < 2:
        raise UsageError("--batch-size goes with --timeout or --jobs (or backends spread over more than one GPU)")
    if args.shard and (args.select or args.suite):
        raise UsageError(f"--{'select' if args.select else 'suite'} goes with a whole run: report merge draws a run's "
                         "programs again, all of them")
    if args.shard and args.require_coverage:
        raise UsageError("--require-coverage goes with a whole run: a shard's cases hit a share of the value coverpoints "
                         "(give it to report merge)")
    try:  # every output is checked and taken before the first program is drawn
        folder = ReportDir(args.report_dir)
    except ReportDirError as e:
        raise UsageError(f"--out: {e}") from None
    journal = None
    try:
        if args.journal:
            facts = {"seed": args.seed, "examples": args.examples, "backends": backends, "reference": args.reference,
                     "profile": args.profile, **({"select": [q.text for q in args.select]} if args.select else {}),
                     **({"suite": args.suite} if args.suite else {})}
            journal = Journal.open(args.journal, {**facts, "shard": "/".join(map(str, args.shard))} if args.shard else facts)
            if journal.count():
                print(f"resuming {args.journal}: {journal.count()} case results already journaled; drawing the programs "
                      "again from the seed (the journal holds results, the reports need each program), then running only "
                      "the cases it lacks", file=sys.stderr)
        programs = _drawn(args)
        if args.shard:
            programs = [p for p in programs if runner.in_shard(p.case_id, args.shard)]
            print(f"shard {args.shard[0]}/{args.shard[1]}: {len(programs)} of them")
        outcome = runner.execute(programs, backends, args.profile, reference=args.reference, journal=journal,
                                 timeout_s=args.timeout, batch_size=args.batch_size or DEFAULT_BATCH_SIZE, jobs=args.jobs,
                                 gpus=gpus, in_process=args.in_process)
        summary, paths = _write_run_reports(args, outcome, folder, time.perf_counter() - started)
        if journal is not None and journal.error:  # the reports hold every result; the journal says where it stopped
            print(f"{PROG}: warning: {journal.error}", file=sys.stderr)
    finally:
        if journal is not None:
            journal.close()
        folder.close()
    return _print_run(args, summary, paths)


def _drawn(args: argparse.Namespace) -> list:
    """The programs of `run` or `export`: drawn from the seed, saying first how many there will be
    (`runner.generate_programs`: --count, and when random ones are drawn up to VALUE_PROGRAMS_MAX
    aimed at the value coverpoints they miss) and then how many there are; those --select keeps."""
    from tcgen05_conformance.harness import runner
    from tcgen05_conformance.harness.selection import select

    if args.suite:
        return _suite_programs(args)
    print(f"drawing {args.examples} programs (one of each instruction family first: {', '.join(runner.FAMILIES)}), "
          f"then up to {runner.VALUE_PROGRAMS_MAX} more aimed at the value coverpoints those miss")
    programs = runner.generate_programs(args.examples, args.seed, runner.Progress("drawing", args.examples, "programs"))
    print(f"{len(programs)} cases: {args.examples} programs drawn, {len(programs) - args.examples} aimed at value "
          "coverpoints")
    if not args.select:
        return programs
    chosen = select(programs, args.select)
    queries = " ".join(f"--select {q.text!r}" for q in args.select)
    if not chosen:
        raise UsageError(f"{queries}: none of the {len(programs)} cases matches")
    print(f"{queries}: {len(chosen)} of the {len(programs)} cases")
    return chosen


def _suite_programs(args: argparse.Namespace) -> list:
    """The programs of --suite VERSION (`tcgen05_conformance.harness.suite.programs`), those --select keeps."""
    from tcgen05_conformance.harness import suite as suites
    from tcgen05_conformance.harness.selection import select

    frozen = suites.load(args.suite)
    draw = frozen["draw"]
    if (args.examples, args.seed) != (draw["count"], draw["seed"]):
        raise UsageError(f"--suite {args.suite} runs its own programs (those of --count {draw['count']} --seed "
                         f"{draw['seed']}): leave --count and --seed out")
    if args.reference != suites.REFERENCE:
        raise UsageError(f"--suite {args.suite}: its expected states are the {suites.REFERENCE}'s (--reference "
                         f"{suites.REFERENCE})")
    print(f"suite {args.suite}: drawing its {len(frozen['cases'])} cases again (seed {draw['seed']}, {draw['count']} "
          "programs)")
    programs = suites.programs(frozen)
    if args.select:
        programs = select(programs, args.select)
        print(f"{' '.join(f'--select {q.text!r}' for q in args.select)}: {len(programs)} of the suite's "
              f"{len(frozen['cases'])} cases")
    if not programs:
        raise UsageError("--select: none of the suite's cases matches")
    return programs


def _gpus_for(args: argparse.Namespace, specs: list[str]) -> list[str]:
    """The GPUs (CUDA_VISIBLE_DEVICES values) of the run's backends that run on one
    (`registry.uses_gpu`): those --gpus asks for (`visible_gpus`: too few visible is bad usage, no
    CUDA driver is nothing ran), by default every visible one, or none where CUDA sees none (such a
    backend then skips, saying why, as without --gpus); [] when no backend of the run uses a GPU,
    and then --gpus is bad usage."""
    if not any(uses_gpu(spec) for spec in specs):
        if args.gpus is not None:
            raise UsageError("--gpus goes with a backend that runs on a GPU (hopper, blackwell, or a plugin whose "
                             "factory has uses_gpu = True)")
        return []
    if args.gpus is not None:
        return visible_gpus(args.gpus)
    try:
        return visible_gpus(None)
    except NothingRan:
        return []


def _write_run_reports(args: argparse.Namespace, outcome, folder, duration: float) -> tuple[dict, list[str]]:
    """The run's summary, and where its reports went: the report directory, or, when writing there
    fails, a new folder in the temporary directory (said on stderr), so that no result is lost."""
    import tempfile

    from tcgen05_conformance.harness import runner
    from tcgen05_conformance.harness.merge import RESULTS_FILE
    from tcgen05_conformance.harness.report import ReportDir, report_files

    summary = runner.summary(outcome, args.seed, args.examples, duration, ["tcgen05-conformance", *args.argv],
                             args.profile, args.shard, args.report_dir)
    results = {
        name: [dict(case_id=r.case_id, status=r.status, detail=r.detail, label=p.label, profile=judged_by)
               for p, r, judged_by in zip(outcome.programs, rs, outcome.profiles)]
        for name, rs in outcome.results.items()
    }
    cases, reports = runner.failing_case_files(outcome), report_files(summary, results)
    if args.shard:  # what `report merge` reads besides summary.json: every case's result
        reports[RESULTS_FILE] = json.dumps(results, indent=1) + "\n"

    def write(into: ReportDir) -> list[str]:
        for name, text in cases.items():
            into.write(name, text)
        return [into.write(name, text) for name, text in reports.items()]

    try:
        return summary, write(folder)
    except OSError as e:
        fallback = tempfile.mkdtemp(prefix="tcgen05-conformance-reports-")
        print(f"{PROG}: error: cannot write the reports to {printable(args.report_dir)} ({printable(e.strerror or str(e))}): "
              f"writing them to {fallback} instead", file=sys.stderr)
        rescue = ReportDir(fallback)
        try:
            return summary, write(rescue)
        finally:
            rescue.close()


def _print_run(args: argparse.Namespace, summary: dict, paths: list[str]) -> int:
    """The run on the console (what was checked, each backend's counts adding up to the cases,
    skips by reason, the first failures) and its exit status."""
    from tcgen05_conformance.harness.report import checked_lines, headline

    cov = summary["coverage"]
    for name, b in summary["backends"].items():
        counts = f"{b['passed']} passed, {b['failed']} failed, {b['errors']} errors, {b['skipped']} skipped"
        print(f"{name}: {summary['cases']} cases: {counts} [{b['role']}]")
        for group in b["skips"]:
            print(f"  skipped {group['count']}: {printable(group['reason'])}")
    for line in checked_lines(summary):
        print(f"checked: {line}")
    profiles = ", ".join(f"{name} {count}" for name, count in summary["profiles"].items())
    print(f"cases judged by profile: {profiles}")
    if summary["gpus"]:
        print(f"GPUs: {', '.join(summary['gpus'])}")
    print(f"Table 39 classes covered: {cov['classes_hit']}/{cov['classes_total']}; seed {args.seed}; "
          f"{summary['duration_s']:.1f} s; reports: {', '.join(paths)}")
    failures = summary["failures"]
    for f in failures[:FAILURES_PRINTED]:
        print(f"  FAIL {f['case_id']} [{f['backend']}] {printable(f['detail'])}\n       {printable(f['replay'])}  (in {summary['replay_dir']})")
    if len(failures) > FAILURES_PRINTED:
        print(f"  ... and {len(failures) - FAILURES_PRINTED} more failures (report.md, summary.json)")
    values = summary["value_coverage"]
    print(f"value coverpoints hit: {values['hit']}/{values['reachable']} reachable"
          + (f"; missed: {', '.join(values['missed'][:5])}{' ...' if len(values['missed']) > 5 else ''}" if values["missed"] else ""))
    print(headline(summary))
    if any(b["failed"] or b["errors"] for b in summary["backends"].values()):
        return EXIT_FAILED
    checked = summary["checked"]
    if checked["nothing_compared"] and checked["backends_under_test"]:
        print(f"{PROG}: nothing ran: {headline(summary).removeprefix('Nothing was compared: ')}", file=sys.stderr)
        return EXIT_NOTHING_RAN
    if not any(b["ran"] for b in summary["backends"].values()):  # the reference alone, and it skipped every case
        print(f"{PROG}: nothing ran: every backend skipped every case", file=sys.stderr)
        return EXIT_NOTHING_RAN
    if args.require_coverage and values["missed"]:
        print(coverage_missed_line(values))
        return EXIT_COVERAGE_MISSED
    return EXIT_OK


def add_replay(sub) -> None:
    rep = sub.add_parser("replay", help="judge programs (JSON) again: backends observe them, compared with the reference")
    rep.add_argument("cases", nargs="+", metavar="CASE",
                     help="a program JSON file (e.g. out/cases/<case id>.json), a case.json of export, or a folder holding "
                          "them: a run's --out folder, an export folder, a folder of program files (repeatable)")
    rep.add_argument("--backend", action="append", type=backend_spec, metavar="NAME",
                     help=f"a backend to run: {', '.join(BACKENDS)}, sim:CMD or MODULE:FACTORY "
                          f"(repeatable; default: {', '.join(DEFAULT_BACKENDS)})")
    rep.add_argument("--reference", type=backend_spec, default=DEFAULT_REFERENCE, metavar="NAME",
                     help=f"the backend whose state the others' must equal, as for run (default {DEFAULT_REFERENCE})")
    rep.add_argument("--profile", type=profile_spec, metavar="PROFILE", help=PROFILE_HELP + ", as for run; a case.json is judged by "
                                                               "its own profile unless this is given")
    rep.add_argument("--select", action="append", type=query, metavar="QUERY", help="keep the cases matching QUERY, as for run")
    rep.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness import runner
    from tcgen05_conformance.harness.case_files import CaseFilesError, case_files
    from tcgen05_conformance.harness.export import load_case
    from tcgen05_conformance.harness.selection import select

    try:
        files = case_files(args.cases)
    except CaseFilesError as e:
        raise UsageError(str(e)) from None
    by_profile: dict[str | None, list] = {}  # the cases of each profile asked for, each case id once (its first file)
    seen: set[str] = set()
    for path in files:
        p, case_profile = load_case(path)
        if p.case_id not in seen:
            seen.add(p.case_id)
            by_profile.setdefault(args.profile or case_profile, []).append(p)
    loaded = len(seen)
    by_profile = {profile: select(group, args.select or []) for profile, group in by_profile.items()}
    chosen = sum(len(group) for group in by_profile.values())
    if not chosen:
        raise UsageError(f"{' '.join(f'--select {q.text!r}' for q in args.select)}: none of the {loaded} cases matches")
    worst, counts = EXIT_OK, {}
    for profile, group in by_profile.items():
        if group:
            outcome = runner.execute(group, args.backend or list(DEFAULT_BACKENDS), profile,
                                     reference=args.reference)
            worst = max(worst, _print_replayed(outcome, counts))
    if chosen > 1:
        print(f"{chosen} cases" + (f" (of {loaded}, --select)" if chosen < loaded else "") + ": "
              + "; ".join(f"{name} {', '.join(f'{n} {status}' for status, n in c.items())}" for name, c in counts.items()))
    return worst


def _print_replayed(outcome, counts: dict[str, dict[str, int]]) -> int:
    """One line per case and backend (and the reference and profile of each case); the statuses
    added to `counts` per backend; EXIT_FAILED when a backend that ran did not pass a case."""
    worst = EXIT_OK
    for k, p in enumerate(outcome.programs):
        if outcome.reference:
            print(f"{p.case_id}: reference {outcome.reference}, profile {outcome.profiles[k]}")
        for name, results in outcome.results.items():
            r, reason = results[k], outcome.summaries[name].skip_reason
            status = "skipped" if reason else r.status
            counts.setdefault(name, {})
            counts[name][status] = counts[name].get(status, 0) + 1
            if reason:
                print(f"{p.case_id} [{name}] skipped: {printable(reason)}")
                continue
            print(f"{p.case_id} [{name}] {r.status}" + (f": {printable(r.detail)}" if r.detail else ""))
            if r.status != "pass":
                worst = EXIT_FAILED
    return worst


def _check_suite_states(version: str, programs: list, references: list) -> None:
    """SuiteError when an expected state `export --suite` computed is not the one the suite froze:
    the files would not be the suite's (a changed oracle or profile)."""
    from tcgen05_conformance.harness.suite import SuiteError, load, state_digest

    frozen = {c["id"]: c.get("expected") for c in load(version)["cases"]}
    differ = [p.case_id for p, o in zip(programs, references) if o.state is not None and frozen.get(p.case_id) != state_digest(o.state)]
    if differ:
        raise SuiteError(f"suite {version}: the oracle here gives other expected states than the suite froze for "
                         f"{len(differ)} cases (first {differ[0]}): this installation's oracle or profiles changed")


def add_export(sub) -> None:
    exp = sub.add_parser("export", help="write the programs of a run with their expected states (the reference's), as "
                                        "files for simulators (docs/simulators.md)")
    deprecated_spelling(exp, "--examples", exp.add_argument(
        "--count", dest="examples", type=examples, default=200, metavar="N",
        help="programs to draw, as for run (default 200; before 1.0 --examples)"))
    exp.add_argument("--seed", type=seed, default=0, help="generation seed, as for run (default 0)")
    exp.add_argument("--reference", type=backend_spec, default=DEFAULT_REFERENCE, metavar="NAME",
                     help=f"the backend whose states are the expected ones, as for run (default {DEFAULT_REFERENCE})")
    exp.add_argument("--profile", type=profile_spec, metavar="PROFILE", help=PROFILE_HELP + ", as for run")
    exp.add_argument("--out", required=True, metavar="DIR", help="where index.json and cases/ go")
    exp.add_argument("--select", action="append", type=query, metavar="QUERY", help="keep the cases matching QUERY, as for run")
    exp.add_argument("--suite", type=suite_version, metavar="VERSION",
                     help="export exactly the cases of suite VERSION, as for run; their expected states must be the ones "
                          "the suite froze")
    exp.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from tcgen05_conformance.harness.report import ReportDir, ReportDirError

    try:  # checked, and locked against another export or run, before the first program is drawn
        folder = ReportDir(args.out)
    except ReportDirError as e:
        raise UsageError(f"--out: {e}") from None
    try:
        return _export(args)
    finally:
        folder.close()


def _export(args: argparse.Namespace) -> int:
    """`export` into its checked and locked --out folder."""
    from tcgen05_conformance.harness import runner
    from tcgen05_conformance.harness.export import INDEX_FILE, export

    programs = _drawn(args)
    references, profiles = runner.reference_observations(programs, args.reference, args.profile,
                                                         runner.Progress(args.reference, len(programs)))
    facts = {"command": command_line(args), "seed": args.seed, "examples": args.examples,
             "reference": args.reference, "profile": args.profile, "select": [q.text for q in args.select or []],
             "suite": args.suite}
    if args.suite:
        _check_suite_states(args.suite, programs, references)
    try:
        index = export(programs, references, profiles, args.out, facts)
    except OSError as e:
        raise UsageError(f"--out {args.out}: cannot write ({e.strerror}: {e.filename})") from None
    print(f"exported {index['exported']} cases with their expected states (from {args.reference}), {index['skipped']} "
          f"skipped (no expected state); index: {os.path.join(args.out, INDEX_FILE)}")
    return EXIT_OK
