"""`numerics measure|infer|proof|agree|fit|sweep|catch-rates|probes`: the numeric model against
silicon, profiles inferred from nothing by directed feature tests (and the H100 proof that the
inference works), a numeric model or simulator against a profile and recorded silicon,
one-parameter sweeps around a profile (over recorded vectors, or on the GPU at silicon speed), how
often discriminating vectors expose a changed datapath, and the probe vectors that would settle a
new GPU's datapath."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from tcgen05_conformance.cli.common import (
    EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_STATUSES, GPU_EXIT_STATUSES, JOBS_LIMIT, PROFILE_FILE_HELP, NothingRan, UsageError,
    JsonSwitch, backend_spec, command_line, count, deprecated_spelling, hopper_gpu_or_skip, machine, output_file, output_folder,
    print_json, profile_spec, require_out, seed, write_json, write_report,
)
from tcgen05_conformance.oracles.numerics.profiles import PARAMETERS as DATAPATH_PARAMETERS

COUNT_LIMIT = 10**12
CATCH_RATE_DATAPATHS = ("f16:f32", "bf16:f32", "e4m3:f32", "f16:f16", "e4m3:f16")


def add(sub) -> None:
    num = sub.add_parser("numerics", help="the numeric model against silicon (measure), profiles inferred from nothing "
                                          "(infer), sweeps around a profile (fit), catch rates of discriminating vectors, "
                                          "probe vectors (docs/numerics.md)")
    num_sub = num.add_subparsers(dest="subcommand", required=True)
    add_measure(num_sub)
    add_infer(num_sub)
    add_proof(num_sub)
    add_agree(num_sub)
    add_fit(num_sub)
    add_sweep(num_sub)
    add_catch_rates(num_sub)
    add_probes(num_sub)


def add_measure(sub) -> None:
    mea = sub.add_parser(
        "measure", help="random and discriminating inner products through mma.sync and wgmma on an sm_90 GPU (or "
                        "tcgen05 on an sm_100 / sm_103 one), diffed bit for bit against the model",
        description="Run COUNT inner products per format combination (every sm_90 mma.sync and wgmma dense format, "
                    "24 in all) on GPU 0 and compare each result with the numeric model (the profile's variant for "
                    "each instruction: sm_90a for wgmma, sm_90a.mma_sync for mma.sync). Needs cuda-core and an "
                    "sm_90 GPU (H100, H200); with --tcgen05, the tcgen05 forms on an sm_100 / sm_103 GPU.",
        epilog=GPU_EXIT_STATUSES)
    mea.add_argument("--count", type=count(1, COUNT_LIMIT, "count"), default=10**7, metavar="N",
                     help="inner products per combination, rounded up to whole chunks of about 2^20 (default 1e7)")
    mea.add_argument("--seed", type=seed, default=0, help="generation seed (default 0)")
    mea.add_argument("--profile", type=profile_spec, metavar="PROFILE",
                     help=f"the profile measured, as its variant per instruction family: a name {PROFILE_FILE_HELP} (default sm_90a)")
    mea.add_argument("--only", action="append", default=[], metavar="TEXT",
                     help="measure the combinations whose id contains TEXT, e.g. wgmma.e4m3 or bf16.f32 (repeatable; "
                          "default: all)")
    mea.add_argument("--jobs", type=count(1, JOBS_LIMIT, "worker count"), default=os.cpu_count() or 1, metavar="N",
                     help="worker processes drawing, packing and comparing (default: every core)")
    mea.add_argument("--out", type=output_file, metavar="FILE",
                     help="write the report here, required (per combination: inner products, mismatches per input family, "
                          "seconds, and with --checker host the time of every stage: draw, pack, copy in, launch, read "
                          "back, unpack, model, compare; also printed in all; before 1.0 --json FILE)")
    mea.add_argument("--json", action=JsonSwitch, help="also print the report as JSON on stdout")
    deprecated_spelling(mea, "--samples", mea.add_argument(
        "--out-samples", dest="samples", type=output_file, metavar="FILE",
        help="write kept vectors with their silicon and model results here (.npz), for numerics fit (before 1.0 --samples)"))
    mea.add_argument("--tiny", type=count(0, 10**7, "count"), default=0, metavar="N",
                     help="also keep up to N vectors per combination whose silicon result is subnormal (default 0)")
    mea.add_argument("--checker", choices=("host", "gpu"), default="host",
                     help="host: draw on the host, run the Python model in worker processes (default); gpu: draw "
                          "on the GPU and check every result there with the integer checker generated from the "
                          "profile, cross-checked with the Python model on a sample (docs/numerics.md); with "
                          "--tcgen05 the operands are drawn on the host and the checker runs on the GPU")
    mea.add_argument("--cross-check", type=count(1, COUNT_LIMIT, "count"), default=10**6, metavar="N",
                     help="--checker gpu: inner products per combination (whole tiles, at most --count) whose "
                          "checker values are compared with the Python model; any difference stops the run "
                          "(default 1e6)")
    deprecated_spelling(mea, "--markdown", mea.add_argument(
        "--out-markdown", dest="markdown", type=output_file, metavar="FILE",
        help="--checker gpu: also write the per-combination table here (Markdown; before 1.0 --markdown)"))
    mea.add_argument("--tcgen05", choices=("sm_100a", "sm_103a"), metavar="TARGET",
                     help="measure the tcgen05 forms of TARGET (sm_100a on a B200, sm_103a on a B300: every kind, format, "
                          "scale format and scale_vec) instead of Hopper's; --profile then defaults to sm_100a")
    mea.add_argument("--mixed-fp8", action="store_true",
                     help="measure the mixed fp8 combinations instead (e4m3 x e5m2 and e5m2 x e4m3 through mma.sync "
                          "and wgmma, f32 and f16 accumulators: 8 in all; with either checker), which settled "
                          "A-MMA-SP-MIXED-FP8 (docs/assumptions.md)")
    mea.set_defaults(func=cmd_measure)


def cmd_measure(args: argparse.Namespace) -> int:
    from tcgen05_conformance.numerics.measure import (
        COMBINATIONS, MIXED_FP8, measure, select, stage_table, tcgen05_combinations,
    )

    if args.mixed_fp8 and args.tcgen05:
        raise UsageError("--mixed-fp8 measures Hopper's mixed fp8 combinations, without --tcgen05")
    pool = tcgen05_combinations(args.tcgen05) if args.tcgen05 else MIXED_FP8 if args.mixed_fp8 else COMBINATIONS
    for text in args.only:
        if not select([text], pool):
            raise UsageError(f"--only {text!r} matches no combination (ids look like {pool[0].id}, {pool[-1].id})")
    require_out(args)
    if args.samples and not args.samples.endswith(".npz"):
        raise UsageError(f"--out-samples {args.samples}: the samples file is written as .npz; name it so")
    if args.checker == "gpu" and (args.samples or args.tiny):
        raise UsageError("--out-samples and --tiny keep host-drawn vectors: use them with --checker host")
    if (args.checker == "host" or args.tcgen05) and args.markdown:
        raise UsageError("--out-markdown writes the table of --checker gpu on Hopper's combinations")
    profile = args.profile or ("sm_100a" if args.tcgen05 else "sm_90a")
    gpu = hopper_gpu_or_skip("numerics measure", args.tcgen05 or "sm_90a")
    chosen = select(args.only, pool)
    if args.checker == "gpu" and not args.tcgen05:
        return _measure_on_gpu(args, gpu, chosen, profile)
    if args.checker == "host":
        report, samples = measure(gpu, chosen, args.count, args.seed, profile, args.jobs, tiny=args.tiny)
    else:  # tcgen05: the integer checker beside the tensor core, the model cross-checking a sample
        checked = _on_gpu_checker("numerics measure", "numerics measure --tcgen05 --checker gpu", lambda: measure(
            gpu, chosen, args.count, args.seed, profile, args.jobs, **_tcgen05_checker(gpu, args.tcgen05, args.cross_check)))
        if checked is None:
            return EXIT_INTERNAL
        report, samples = checked
    report["command"] = command_line(args)
    report["machine"] = machine()
    write_report(args, report)
    if args.samples:
        import numpy as np

        np.savez_compressed(args.samples, **samples)
    print(stage_table(report), file=sys.stderr)
    print(f"{len(chosen)} combinations, {report['mismatches']} mismatches, {report['seconds']} s; report: {args.out}",
          file=sys.stderr)
    return EXIT_OK if report["mismatches"] == 0 else EXIT_FAILED


def _on_gpu_checker(command: str, spelled: str, work: Callable[[], dict]) -> dict | None:
    """The report of `work`, a run of the GPU checker: NothingRan (naming `spelled`) without NVRTC;
    None, said on stderr, when the checker and the Python model disagree (the caller exits 3)."""
    from tcgen05_conformance.device.check_kernels import NvrtcError
    from tcgen05_conformance.oracles.numerics.checker import CrossCheckError

    try:
        return work()
    except NvrtcError as e:
        raise NothingRan(f"{spelled}: {e}") from None
    except CrossCheckError as e:
        print(f"{command}: the GPU checker disagrees with the Python model, results not trusted: {e}", file=sys.stderr)
        return None


def _tcgen05_checker(gpu, target: str, cross_check: int) -> dict:
    """`measure`'s options for checking tcgen05 forms with the integer checker on `gpu` (its kernels
    compiled by NVRTC for `target`), the Python model cross-checking the first `cross_check` inner
    products of each form."""
    from collections import Counter

    from tcgen05_conformance.campaign.checker import GpuReference, checker_module, tiles_checked

    reference = GpuReference(gpu, checker_module(gpu, target), Counter())
    return {"expected": tiles_checked(reference), "cross_check": cross_check}


def _measure_on_gpu(args: argparse.Namespace, gpu, chosen, profile: str) -> int:
    from tcgen05_conformance.numerics.gpu_checker import check, markdown

    report = _on_gpu_checker("numerics measure", "numerics measure --checker gpu", lambda: check(
        gpu, chosen, args.count, args.seed, profile, args.jobs, args.cross_check,
        progress=lambda partial: write_json(args.out, {**partial, "complete": False})))
    if report is None:
        return EXIT_INTERNAL
    report["command"] = command_line(args)
    report["machine"] = machine()
    report["complete"] = True
    write_report(args, report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(report))
    print(f"{len(chosen)} combinations, {sum(e['checked'] for e in report['combinations'])} inner products checked, "
          f"{report['mismatches']} mismatches, {report['seconds']} s; report: {args.out}", file=sys.stderr)
    return EXIT_OK if report["mismatches"] == 0 and report["unchecked"] == 0 else EXIT_FAILED


def add_infer(sub) -> None:
    inf = sub.add_parser(
        "infer", help="infer a numeric profile from nothing by directed feature tests on a backend (docs/numerics.md, "
                      "\"Inferring a profile\")",
        description="Send directed inner products (subnormals, alignment, carries, cancellation, rounding ties, group "
                    "boundaries, where c enters, zero signs, overflow, block scales) to a backend and read every datapath "
                    "parameter of the numeric model off its answers, starting from no profile; confirm the result on "
                    "discriminating vectors. On recorded vectors (which cannot be asked new questions) it says which "
                    "parameters the recordings determine and which they leave open. --out writes the profile with its "
                    "provenance (source, GPU, driver, command, date), which --profile loads wherever a profile name is "
                    "taken (run, replay, export, campaign, vectors check, numerics measure/fit, the pytest plugin).",
        epilog=GPU_EXIT_STATUSES.replace("or not an sm_90 GPU", "or not the backend's GPU (hopper: sm_90; blackwell: "
                                                                 "sm_100 / sm_103)"))
    inf.add_argument("--backend", required=True, type=_infer_backend, metavar="B",
                     help="what answers: oracle (the numeric model under --profile), hopper (an sm_90 GPU: --instruction "
                          "wgmma, the default, or mma.sync), blackwell (tcgen05.mma on an sm_100 / sm_103 GPU), sim:CMD (a "
                          "numeric simulator speaking the line protocol of docs/numerics.md, not the program protocol of "
                          "docs/simulators.md), MODULE:FACTORY (factory(profile=...) returning a vector source, "
                          "conformance/numerics/sources.py), or recorded vectors: recorded:DIR (DIR a folder, or B200 / "
                          "H100 of the shipped recordings) or a folder")
    inf.add_argument("--instruction", choices=("wgmma", "mma.sync", "tcgen05"),
                     help="the instruction family inferred (hopper: wgmma or mma.sync, default wgmma; blackwell: tcgen05; "
                          "oracle: the profile's variant for it)")
    inf.add_argument("--profile", type=profile_spec, metavar="PROFILE",
                     help=f"the profile the oracle backend computes with (a name {PROFILE_FILE_HELP}), or handed to a "
                          "MODULE:FACTORY")
    inf.add_argument("--out", type=output_file, metavar="FILE",
                     help="write the inferred profile with its evidence here (JSON), for --profile FILE")
    inf.add_argument("--name", help="the inferred profile's name (default: from the backend)")
    inf.add_argument("--formats", metavar="F,F", help="only these input formats, e.g. f16,e4m3 (default: every one the "
                                                      "backend runs)")
    inf.add_argument("--confirm", type=count(0, 10**7, "count"), default=4096, metavar="N",
                     help="discriminating vectors per datapath checked against the inferred profile (default 4096)")
    inf.add_argument("--seed", type=seed, default=0, help="seed of those vectors (default 0)")
    inf.add_argument("--compare", type=profile_spec, metavar="PROFILE",
                     help="compare the result with a profile (name or file) parameter for parameter; exit status 1 if any "
                          "differs")
    inf.add_argument("--recorded", metavar="DIR", help="also run the recorded vectors under DIR (a GPU or format folder) "
                                                       "through the backend and count where it differs from that silicon")
    inf.add_argument("--json", action="store_true", help="print the whole report as JSON")
    inf.set_defaults(func=cmd_infer)


def _infer_backend(text: str) -> str:
    """A backend spec as run takes (refused while parsing when it names none), or recorded vectors."""
    if text.startswith("recorded") or ("/" in text and ":" not in text) or os.path.isdir(text):
        return text
    return backend_spec(text)


def cmd_infer(args: argparse.Namespace) -> int:
    from tcgen05_conformance.numerics.infer import run_command, summary_lines
    from tcgen05_conformance.numerics.sources import SimulatorError, SourceUnavailable
    from tcgen05_conformance.oracles.numerics import VectorFileError

    try:
        report, status = run_command(args, command_line(args))
    except SourceUnavailable as e:
        raise NothingRan(f"numerics infer --backend {args.backend}: {e}") from None
    except (SimulatorError, VectorFileError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    if args.json:
        print_json(report)
    else:
        print("\n".join(summary_lines(report)))
    return EXIT_OK if status == 0 else EXIT_FAILED


def add_proof(sub) -> None:
    pro = sub.add_parser(
        "proof", help="on an H100: infer the wgmma and mma.sync profiles from nothing, compare them with sm_90a and "
                      "sm_90a.mma_sync, then check N fresh inner products per input format against them",
        description="The proof that numerics infer works (conformance/numerics/proof.py): infer both Hopper "
                    "profiles from nothing on GPU 0, compare each parameter for parameter with the committed one, then "
                    "run at least N fresh random and discriminating inner products per input format (f16, bf16, tf32, "
                    "e4m3, e5m2, s8, u8; over both instructions, every accumulator, with and without .satfinite) through "
                    "the shared driver and compare them with the inferred profiles on every core. Writes the inferred "
                    "profiles, h100-inference-proof.json and .md under DIR. --backend oracle runs the same path with the "
                    "numeric model answering and standing in for silicon (no GPU). Exit status 1 when a parameter "
                    "differs or an inner product mismatches.",
        epilog=GPU_EXIT_STATUSES)
    pro.add_argument("--out", required=True, type=output_folder, metavar="DIR", help="folder for the reports (created)")
    pro.add_argument("--per-format", type=count(1, COUNT_LIMIT, "count"), default=10**8, metavar="N",
                     help="fresh inner products per input format, at least (whole chunks of about 2^20 per combination; "
                          "default 1e8)")
    pro.add_argument("--backend", choices=("hopper", "oracle"), default="hopper",
                     help="hopper: GPU 0, an sm_90 GPU (default); oracle: the numeric model stands in for it")
    pro.add_argument("--seed", type=seed, default=18, help="seed of the fresh inner products (default 18)")
    pro.add_argument("--jobs", type=count(1, JOBS_LIMIT, "worker count"), default=os.cpu_count() or 1, metavar="N",
                     help="worker processes drawing, packing and comparing (default: every core)")
    pro.set_defaults(func=cmd_proof)


def cmd_proof(args: argparse.Namespace) -> int:
    from pathlib import Path

    gpu = hopper_gpu_or_skip("numerics proof") if args.backend == "hopper" else None
    from tcgen05_conformance.numerics.proof import prove

    report = prove(gpu, Path(args.out), args.per_format, args.seed, args.jobs, command_line(args))
    return EXIT_OK if report["passed"] else EXIT_FAILED


def add_agree(sub) -> None:
    agr = sub.add_parser(
        "agree", help="where a numeric model or simulator agrees with a profile (discriminating vectors) and with "
                      "silicon (recorded vectors), per format",
        description="Send N discriminating vectors per (input, accumulator) pair the backend runs (every family of "
                    "generators/numeric_vectors.py, K the backend's), per block scaling it runs (with discriminating "
                    "scales) and per mixed input pair, and compare its results with the profile's; replay "
                    "every recorded file under each --recorded folder through it and compare with the recorded silicon. "
                    "A backend is any numerics infer takes that evaluates (a simulator over the line protocol, say: "
                    "examples/numeric_simulators/). Exit status 1 when anything differs.",
        epilog=GPU_EXIT_STATUSES.replace("or not an sm_90 GPU", "or not the backend's GPU"))
    agr.add_argument("--backend", required=True, type=_infer_backend, metavar="B",
                     help="as for numerics infer: oracle, hopper, blackwell, sim:CMD, MODULE:FACTORY (not recorded vectors)")
    agr.add_argument("--instruction", choices=("wgmma", "mma.sync", "tcgen05"), help="as for numerics infer")
    agr.add_argument("--profile", required=True, type=profile_spec, metavar="PROFILE",
                     help=f"the profile compared with (a name {PROFILE_FILE_HELP}); for the oracle backend also what it "
                          "computes with")
    agr.add_argument("--recorded", action="append", default=[], metavar="DIR",
                     help="a folder of recorded vectors (GPU or format folder) replayed through the backend (repeatable)")
    deprecated_spelling(agr, "--vectors", agr.add_argument(
        "--count", dest="vectors", type=count(0, 10**7, "count"), default=1000, metavar="N",
        help="discriminating vectors per pair (default 1000; before 1.0 --vectors)"))
    agr.add_argument("--formats", metavar="F,F", help="only these input formats (default: every one the backend runs)")
    agr.add_argument("--seed", type=seed, default=0, help="seed of the discriminating vectors (default 0)")
    agr.add_argument("--out", type=output_file, metavar="FILE", help="also write the report here (JSON; before 1.0 --json FILE)")
    agr.add_argument("--json", action=JsonSwitch, help="print the report as JSON on stdout instead of the table")
    agr.set_defaults(func=cmd_agree)


def cmd_agree(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.numerics.infer import agreement, source_for_backend
    from tcgen05_conformance.numerics.sources import SimulatorError, SourceUnavailable
    from tcgen05_conformance.oracles.numerics import VectorFileError

    formats = [f.strip() for f in args.formats.split(",")] if args.formats else None
    try:
        source = source_for_backend(args.backend, args.instruction, args.profile)
    except SourceUnavailable as e:
        raise NothingRan(f"numerics agree --backend {args.backend}: {e}") from None
    if isinstance(source, str):
        raise UsageError(f"--backend {args.backend}: recorded vectors do not evaluate new inner products; pass them "
                         "as --recorded")
    try:
        report = agreement(source, args.profile, args.recorded, args.vectors, args.seed, formats)
    except (SimulatorError, VectorFileError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    finally:
        if hasattr(source, "close"):
            source.close()
    report["command"] = command_line(args)
    write_report(args, report)
    if args.json:
        return EXIT_OK if report["mismatches"] == 0 else EXIT_FAILED
    rows = [[f"{p['input']}{' x ' + p['b_input'] if 'b_input' in p else ''} -> {p['accumulator']}"
             + (f" ({p['kind']}, {p['scale_fmt']} block{p['block']})" if "kind" in p else ""),
             f"discriminating (K = {p['k']}) vs {args.profile}",
             p.get("skipped") or f"{p['mismatches']} of {p['vectors']}",
             ", ".join(f"{f} {n}" for f, n in p.get("mismatches_per_family", {}).items())] for p in report["discriminating"]]
    rows += [[f"{r['input']} -> {r['accumulator']}" if "input" in r else "", f"recorded {r['file']}",
              r.get("skipped") or f"{r['mismatches']} of {r['vectors']}", ""] for r in report["recorded"]]
    print(tabulate(rows, ["pair", "against", "mismatches", "per family"], tablefmt="github"))
    return EXIT_OK if report["mismatches"] == 0 else EXIT_FAILED


def add_fit(sub) -> None:
    fit = sub.add_parser(
        "fit", help="one-parameter sweeps around a profile over recorded vectors or measured samples",
        description="Vary each structural parameter of the profile's datapaths alone over a small range and count "
                    "mismatches against recorded vectors (a GPU folder or one format folder) or the samples file "
                    "of numerics measure --samples (.npz): which values the recordings accept and which they reject.",
        epilog=EXIT_STATUSES + "; a sweep in which the profile itself mismatches counts as failed")
    fit.add_argument("path", help="a folder of recorded vectors (e.g. oracles/numerics/recordings/tensor-core-vectors/B200) or a "
                                  "samples file (.npz) of numerics measure")
    fit.add_argument("--profile", required=True, type=profile_spec, metavar="PROFILE",
                     help=f"the profile swept around (for samples: its variant per instruction family): a name {PROFILE_FILE_HELP}")
    fit.add_argument("--json", action="store_true", help="print the report as JSON")
    fit.set_defaults(func=cmd_fit)


def cmd_fit(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.numerics.fit import fit
    from tcgen05_conformance.oracles.numerics import VectorFileError

    try:
        report = fit(args.path, args.profile)
    except (VectorFileError, FileNotFoundError, NotADirectoryError) as e:
        raise UsageError(str(e)) from None
    report["command"] = command_line(args)
    sweeps = report["sweeps"]
    if args.json:
        print_json(report)
    else:
        labels = [s.get("combination") or f"{s['gpu']} {s['format']}->{s['output']}" for s in sweeps]
        variants = list(dict.fromkeys(v for s in sweeps for v in s["mismatches"]))
        print(tabulate([[v, *(s["mismatches"].get(v, "") for s in sweeps)] for v in variants],
                       ["mismatches", *labels], tablefmt="simple"))
        print(f"vectors: {', '.join(str(s['vectors']) for s in sweeps)}; profile {args.profile}: "
              f"{sum(s['mismatches']['profile'] == 0 for s in sweeps)} of {len(sweeps)} sweeps without a mismatch")
    return EXIT_OK if all(s["mismatches"]["profile"] == 0 for s in sweeps) else EXIT_FAILED


#: The datapath parameters `numerics sweep` varies (every model parameter but the instruction's name).
SWEPT_PARAMETERS = tuple(p for p in DATAPATH_PARAMETERS if p != "instruction")
_WORDS = {"none": None, "true": True, "false": False}


def _parameter_values(text: str) -> list:
    """`none,-30,rz,true` as [None, -30, 'rz', True]: the values a Datapath field takes."""
    values = []
    for word in text.split(","):
        word = word.strip()
        if not word:
            raise argparse.ArgumentTypeError(f"{text!r}: an empty value in the list")
        try:
            values.append(int(word))
        except ValueError:
            values.append(_WORDS.get(word.lower(), word))
    return values


def add_sweep(sub) -> None:
    swe = sub.add_parser(
        "sweep", help="one datapath parameter varied on the GPU checker: silicon mismatches of each value",
        description="For each chosen combination and each value of one datapath parameter (the profile's own value "
                    "first), run COUNT inner products on GPU 0 and check them with the integer checker built from the "
                    "varied datapath (numerics measure --checker gpu). Each variant's checker is first compared with "
                    "the Python model under the same variant on a sample. Values that give 0 mismatches are the ones "
                    "silicon does not refute: how a profile parameter is fitted at silicon speed (docs/numerics.md).",
        epilog=GPU_EXIT_STATUSES + "; 1 here means the profile's own value mismatched")
    swe.add_argument("--parameter", required=True, choices=SWEPT_PARAMETERS, help="the datapath parameter varied")
    swe.add_argument("--values", required=True, type=_parameter_values, metavar="V,V,...",
                     help="the values tried besides the profile's: integers, none, rne/rz, first_group/final_add, "
                          "true/false, ieee/positive")
    swe.add_argument("--only", action="append", default=[], metavar="TEXT",
                     help="the combinations whose id contains TEXT, e.g. f16.f16 (repeatable; default: all 24)")
    swe.add_argument("--count", type=count(1, COUNT_LIMIT, "count"), default=10**9, metavar="N",
                     help="inner products per combination and value, in whole tiles (default 1e9)")
    swe.add_argument("--seed", type=seed, default=0, help="generation seed (default 0)")
    swe.add_argument("--profile", default="sm_90a", type=profile_spec, metavar="PROFILE",
                     help=f"the profile varied, as its variant per instruction family: a name {PROFILE_FILE_HELP} "
                          "(default sm_90a)")
    swe.add_argument("--cross-check", type=count(1, COUNT_LIMIT, "count"), default=10**5, metavar="N",
                     help="inner products per combination and value whose checker values are compared with the "
                          "Python model under the same variant; any difference stops the sweep (default 1e5)")
    swe.add_argument("--out", type=output_file, metavar="FILE", help="write the report here, required (before 1.0 --json FILE)")
    swe.add_argument("--json", action=JsonSwitch, help="also print the report as JSON on stdout")
    swe.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.numerics.gpu_checker import sweep
    from tcgen05_conformance.numerics.measure import select

    chosen = select(args.only)
    if not chosen:
        raise UsageError(f"--only {args.only} matches no combination")
    require_out(args)
    gpu = hopper_gpu_or_skip("numerics sweep")
    try:
        report = _on_gpu_checker("numerics sweep", "numerics sweep", lambda: sweep(
            gpu, chosen, args.parameter, args.values, args.count, args.seed, args.profile, args.cross_check))
    except ValueError as e:
        raise UsageError(f"numerics sweep: {e}") from None
    if report is None:
        return EXIT_INTERNAL
    report["command"] = command_line(args)
    report["machine"] = machine()
    write_report(args, report)
    values = list(dict.fromkeys(str(row["value"]) for e in report["combinations"] for row in e["values"]))
    table = [[v, *(next((f"{row['mismatches']:,}" + (" (profile)" if row["profile's"] else "")
                         for row in e["values"] if str(row["value"]) == v), "") for e in report["combinations"])]
             for v in values]
    print(tabulate(table, [args.parameter, *(e["id"] for e in report["combinations"])], tablefmt="simple"))
    own_clean = all(row["mismatches"] == 0 for e in report["combinations"] for row in e["values"] if row["profile's"])
    return EXIT_OK if own_clean else EXIT_FAILED


def _datapath(text: str) -> tuple[str, str]:
    parts = text.split(":")
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a datapath INPUT:ACCUMULATOR, e.g. e4m3:f32")
    return parts[0], parts[1]


def add_catch_rates(sub) -> None:
    cat = sub.add_parser(
        "catch-rates", help="how often each family of discriminating vectors exposes a one-parameter change of a "
                            "datapath",
        description="For each datapath, the fraction of N vectors per family (K = the datapath's k_step) whose "
                    "result changes when one datapath parameter changes, as Markdown tables (docs/numerics.md).")
    cat.add_argument("datapaths", nargs="*", type=_datapath, metavar="IN:ACC",
                     help=f"datapaths, e.g. e4m3:f32 (default: {' '.join(CATCH_RATE_DATAPATHS)})")
    deprecated_spelling(cat, "--n", cat.add_argument(
        "--count", dest="n", type=count(1, 10**7, "count"), default=2000, metavar="N",
        help="vectors per family (default 2000; before 1.0 --n)"))
    cat.add_argument("--seed", type=seed, default=11, help="generation seed (default 11)")
    cat.add_argument("--profile", default="sm_100a", type=profile_spec, metavar="PROFILE",
                     help=f"the profile whose datapaths are changed: a name {PROFILE_FILE_HELP} (default sm_100a)")
    cat.add_argument("--json", action="store_true", help="print {datapath: {change: {family: rate}}} as JSON")
    cat.set_defaults(func=cmd_catch_rates)


def cmd_catch_rates(args: argparse.Namespace) -> int:
    import numpy as np

    from tcgen05_conformance.core.formats import get_format
    from tcgen05_conformance.numerics.catch_rates import TARGETS, catch_rates
    from tcgen05_conformance.generators.numeric_vectors import FAMILIES
    from tcgen05_conformance.oracles.numerics.profiles import get_profile

    datapaths = args.datapaths or [_datapath(d) for d in CATCH_RATE_DATAPATHS]
    profile = get_profile(args.profile)
    for in_fmt, acc_fmt in datapaths:
        for fmt in (in_fmt, acc_fmt):
            try:
                get_format(fmt)
            except ValueError:
                raise UsageError(f"{in_fmt}:{acc_fmt}: {fmt!r} is not a number format") from None
        try:
            exact = profile.datapath(in_fmt, acc_fmt).k_step is None
        except ValueError as e:
            raise UsageError(str(e)) from None
        if exact:
            raise UsageError(f"profile {args.profile} computes {in_fmt} -> {acc_fmt} exactly: no datapath to change")
    rates = {f"{i}:{a}": catch_rates(i, a, args.n, args.seed, args.profile) for i, a in datapaths}
    if args.json:
        print_json({"command": command_line(args), "profile": args.profile, "n": args.n, "seed": args.seed,
                    "rates": rates})
        return EXIT_OK
    for name, table in rates.items():
        in_fmt, acc_fmt = name.split(":")
        print(f"\n{args.profile} {in_fmt} -> {acc_fmt} (K = k_step, {args.n} vectors per family, seed {args.seed})\n")
        print("| family | " + " | ".join(table) + " |")
        print("| --- |" + " --- |" * len(table))
        for f in FAMILIES:
            print(f"| {f} | " + " | ".join(f"{table[p][f]:.3f}" for p in table) + " |")
        targeted = [np.mean([table[p][f] for f in TARGETS[p]]) if p in TARGETS else None for p in table]
        print("| **targeted** | " + " | ".join("" if t is None else f"**{t:.3f}**" for t in targeted) + " |")
    return EXIT_OK


def add_probes(sub) -> None:
    pro = sub.add_parser("probes", help="the probe inner products for a new GPU and what each datapath hypothesis "
                                        "predicts (docs/numerics.md)")
    pro.add_argument("--json", action="store_true", help="print the probes as JSON")
    pro.set_defaults(func=cmd_probes)


def cmd_probes(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from tcgen05_conformance.oracles.numerics.probes import table

    rows = table()
    if args.json:
        print_json({"command": command_line(args), "probes": rows})
    else:
        print(tabulate([[r["name"], f"{r['in']} -> {r['acc']}", ", ".join(f"{h} {v}" for h, v in r["predictions"].items())]
                        for r in rows], ["probe", "formats", "predictions"], tablefmt="simple"))
    return EXIT_OK
