"""`numerics agree`: how a vector source (a third-party model, say) agrees with a profile on
discriminating, block-scaled and mixed vectors, and with silicon on the recorded vectors replayed
through it (`agreement`, `replay_recorded`)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from tcgen05_conformance.generators.numeric_vectors import FAMILIES, draw_scales, mix
from tcgen05_conformance.numerics.block_scaled import scaled_kinds
from tcgen05_conformance.numerics.hypotheses import _unsigned
from tcgen05_conformance.numerics.sources import SimulatorSource, VectorSource, mixed_pairs_of
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import Profile

def replay_recorded(source: VectorSource, path) -> list[dict]:
    """Every recorded result file under `path` whose pair the source runs, evaluated by the source
    (silicon's inner products through a simulator, say): vectors and mismatches per file."""
    from tcgen05_conformance.oracles.numerics.vectors import find_folders, load_folder

    out = []
    runs = set(source.pairs())
    for folder in find_folders(path):
        for rec in load_folder(folder):
            if (rec.in_fmt, rec.acc_fmt) not in runs:
                out.append({"file": str(rec.path), "skipped": f"the source does not run {rec.in_fmt}->{rec.acc_fmt}"})
                continue
            refused: dict[int, str] = {}
            got = _evaluate(source, rec.in_fmt, rec.acc_fmt, rec.a, rec.b, rec.c, refused)
            wrong = got != _unsigned(rec.d)
            wrong[list(refused)] = True
            bad = np.flatnonzero(wrong)
            out.append({"file": str(rec.path), "input": rec.in_fmt, "accumulator": rec.acc_fmt, "recorded_with": rec.recording.instruction,
                        "vectors": int(len(got)), "mismatches": int(len(bad)), "first_mismatch_lines": [int(i) + 1 for i in bad[:5]],
                        **_refusals(refused)})
    return out


def _evaluate(source: VectorSource, in_fmt: str, acc: str, a, b, c, refused: dict[int, str]) -> np.ndarray:
    """The source's results as unsigned codes; a simulator's refusals (`error` replies) go into
    `refused` (a source that cannot refuse takes no such argument)."""
    if isinstance(source, SimulatorSource):
        return _unsigned(source.evaluate(in_fmt, acc, a, b, c, refused=refused))
    return _unsigned(source.evaluate(in_fmt, acc, a, b, c))


def _refusals(refused: dict[int, str]) -> dict:
    """How many requests a simulator refused (counted as mismatches), and the first refusal."""
    if not refused:
        return {}
    first = min(refused)
    return {"refused": len(refused), "first_refusal": {"vector": first + 1, "error": refused[first]}}


def agreement(source: VectorSource, profile: str, recorded: Sequence[str], vectors: int, seed: int,
              formats: Iterable[str] | None = None) -> dict:
    """How a source (a third-party model, say) agrees with a profile and with silicon: per
    (input, accumulator) pair it runs, `vectors` discriminating vectors (every family of
    `tcgen05_conformance.generators.numeric_vectors`, K the source's) against the profile's results, with the
    mismatches per family; the same for every block scaling (with discriminating scales,
    `draw_scales`, against the profile's datapath of the scaling's kind) and every mixed pair it
    runs; and every recorded file under `recorded` replayed through it."""
    from tcgen05_conformance.oracles.numerics.profiles import get_profile

    wanted = set(formats) if formats is not None else None
    pairs = []
    for i, (in_fmt, acc) in enumerate(source.pairs()):
        if wanted is not None and in_fmt not in wanted:
            continue
        k = source.k(in_fmt, acc)
        a, b, c, labels = mix(in_fmt, acc, k, vectors, np.random.default_rng([seed, i]))
        try:
            want = inner_product(a, b, c, in_fmt, acc, get_profile(profile))
        except ValueError as e:  # the profile has no such datapath
            pairs.append({"input": in_fmt, "accumulator": acc, "k": k, "skipped": str(e)})
            continue
        refused: dict[int, str] = {}
        bad = _evaluate(source, in_fmt, acc, a, b, c, refused) != _unsigned(want)
        bad[list(refused)] = True
        pairs.append({"input": in_fmt, "accumulator": acc, "k": k, "vectors": int(len(bad)), "mismatches": int(bad.sum()),
                      "mismatches_per_family": {FAMILIES[f]: int(n) for f, n in enumerate(np.bincount(labels[bad],
                                                                                                 minlength=len(FAMILIES))) if n},
                      **_refusals(refused)})
    pairs += _scaled_and_mixed_agreement(source, get_profile(profile), vectors, seed, wanted)
    replays = [r for folder in recorded for r in replay_recorded(source, folder) if wanted is None or r.get("input") in wanted]
    return {"source": dict(source.provenance()), "profile": profile, "seed": seed, "discriminating": pairs, "recorded": replays,
            "mismatches": sum(p.get("mismatches", 0) for p in pairs) + sum(r.get("mismatches", 0) for r in replays)}


def _scaled_and_mixed_agreement(source: VectorSource, profile: Profile, vectors: int, seed: int,
                                wanted: set | None) -> list[dict]:
    """`agreement`'s entries for the source's block scalings and mixed input pairs."""
    out = []
    for i, (in_fmt, acc) in enumerate(source.pairs()):
        if acc != "f32" or (wanted is not None and in_fmt not in wanted):
            continue
        for j, scaling in enumerate(source.scalings(in_fmt)):
            rng = np.random.default_rng([seed, i, j, 1])
            a, b, c, labels = mix(in_fmt, acc, scaling.k, vectors, rng)
            sa, sb = draw_scales(scaling.scale_fmt, vectors, scaling.k // scaling.block, rng)
            order = rng.permutation(vectors)
            sa, sb = sa[order], sb[order]
            kind = scaled_kinds(scaling)[0]
            entry = {"input": in_fmt, "accumulator": acc, "k": scaling.k, "kind": kind, "scale_fmt": scaling.scale_fmt,
                     "block": scaling.block}
            try:
                want = _unsigned(inner_product(a, b, c, in_fmt, acc, profile, a_scale=sa, b_scale=sb,
                                               scale_fmt=scaling.scale_fmt, kind=kind))
            except ValueError as e:
                out.append({**entry, "skipped": str(e)})
                continue
            got = _unsigned(source.evaluate(in_fmt, acc, a, b, c, a_scale=sa, b_scale=sb, scale_fmt=scaling.scale_fmt))
            out.append({**entry, **_mismatches(got != want, labels)})
    for a_fmt, b_fmt, acc in mixed_pairs_of(source):
        if wanted is not None and a_fmt not in wanted and b_fmt not in wanted:
            continue
        k = source.k(a_fmt, acc)
        a, b, c, labels = mix((a_fmt, b_fmt), acc, k, vectors, np.random.default_rng([seed, 2, len(out)]))
        entry = {"input": a_fmt, "b_input": b_fmt, "accumulator": acc, "k": k}
        try:
            want = _unsigned(inner_product(a, b, c, (a_fmt, b_fmt), acc, profile))
        except ValueError as e:
            out.append({**entry, "skipped": str(e)})
            continue
        out.append({**entry, **_mismatches(_unsigned(source.evaluate_mixed(a_fmt, b_fmt, acc, a, b, c)) != want, labels)})
    return out


def _mismatches(bad: np.ndarray, labels: np.ndarray) -> dict:
    return {"vectors": int(len(bad)), "mismatches": int(bad.sum()),
            "mismatches_per_family": {FAMILIES[f]: int(n) for f, n in enumerate(np.bincount(labels[bad], minlength=len(FAMILIES))) if n}}
