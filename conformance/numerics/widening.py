"""Widened inputs, inferred from mixed fp8 vectors (`infer_widening`): whether the source reads e4m3
and e5m2 operands as themselves or as f16 before its datapaths, which only vectors with subnormal fp8
operands show."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from tcgen05_conformance.core.formats import get_format, storage_dtype
from tcgen05_conformance.numerics.directed_vectors import Builder
from tcgen05_conformance.numerics.hypotheses import Inconsistent, _unsigned
from tcgen05_conformance.numerics.sources import VectorSource, mixed_pairs_of
from tcgen05_conformance.oracles.numerics import inner_product
from tcgen05_conformance.oracles.numerics.profiles import Datapath, Profile

#: What an instruction may read an fp8 operand as before its datapath (`Profile.widened_inputs`):
#: itself, or f16, which holds e4m3 and e5m2 exactly (ptxas lowers warp-level fp8 MMA on sm_90a so,
#: A-MMA-SP-MIXED-FP8).
WIDENINGS = (None, "f16")


@dataclass
class WideningInference:
    """`widened_inputs` inferred from mixed fp8 vectors: the value, its provenance, the evidence."""

    value: dict[str, str]
    provenance: str
    evidence: dict


def widening_vectors(a_fmt: str, b_fmt: str, acc_fmt: str, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed mixed vectors (raw codes a, b [n, k], c [n]) in which widening an fp8 operand to f16
    changes the result: the largest product has a subnormal operand (which f16 holds as a normal
    number, so the product aligns up to 3 binades lower), and one tiny product (a smallest
    subnormal times a power of two, every exponent of the other format) sits at one of a few
    positions, above or below the alignment grid depending on which reading the datapath has.
    Both orders: the subnormal in A, and in B."""
    fa, fb = get_format(a_fmt), get_format(b_fmt)
    zero_a, zero_b = Builder.code(fa, 0.0), Builder.code(fb, 0.0)
    positions = sorted({p for p in (1, 2, 3, 4, 5, k // 2, k - 1) if 0 < p < k})
    rows_a, rows_b = [], []
    for small, big, small_in_a in ((fa, fb, True), (fb, fa, False)):
        unit = 2.0 ** (small.emin - small.frac_bits)  # the smallest subnormal
        subnormals = sorted({unit, unit * (1 << (small.frac_bits - 1)), unit * ((1 << small.frac_bits) - 1)})
        bigs = (2.0 ** big.emax, 1.5 * 2.0 ** (big.emax - 3))
        for x, y, e, sign, pos in itertools.product(subnormals, bigs, range(big.emin - big.frac_bits, big.emax + 1),
                                                    (1.0, -1.0), positions):
            codes = [Builder.code(small, x), Builder.code(big, y), Builder.code(small, sign * unit),
                     Builder.code(big, 2.0 ** e)]
            if None in codes:
                continue
            a = np.full(k, zero_a, np.int64)
            b = np.full(k, zero_b, np.int64)
            a[0], b[0] = (codes[0], codes[1]) if small_in_a else (codes[1], codes[0])
            a[pos], b[pos] = (codes[2], codes[3]) if small_in_a else (codes[3], codes[2])
            rows_a.append(a)
            rows_b.append(b)
    c = np.zeros(len(rows_a), np.uint64).astype(np.dtype(storage_dtype(get_format(acc_fmt)).str.replace("i", "u")))
    return (np.array(rows_a).astype(storage_dtype(fa)), np.array(rows_b).astype(storage_dtype(fb)), c)


def infer_widening(source: VectorSource, datapaths: dict[tuple[str, str], Datapath]) -> WideningInference:
    """Which fp8 formats the source widens to f16 before its datapaths (inferred above) read them:
    every combination of `WIDENINGS` per format is tried on the directed mixed vectors, and those
    reproducing every result are kept. A format whose reading no vector shows (e5m2, whose
    exponent field f16 shares) takes the reading of the other, which the same instruction
    reads; with no mixed pairs the source evaluates, nothing is widened, and the provenance says
    why. Inconsistent when no combination reproduces the source."""
    offered = mixed_pairs_of(source)
    triples = [t for t in offered if (t[0], t[2]) in datapaths and (t[1], t[2]) in datapaths]
    if not triples:
        why = ("the datapaths of no mixed pair's two formats were inferred (--formats)" if offered else
               "the source evaluates no mixed fp8 inputs")
        return WideningInference({}, f"not inferred: {why}, and vectors of one format cannot show a widening "
                                     "(docs/numerics.md, \"Widened inputs\")", {})
    formats = sorted({f for t in triples for f in t[:2]})
    observed = []
    for a_fmt, b_fmt, acc in triples:
        a, b, c = widening_vectors(a_fmt, b_fmt, acc, source.k(a_fmt, acc))
        observed.append((a_fmt, b_fmt, acc, a, b, c, _unsigned(source.evaluate_mixed(a_fmt, b_fmt, acc, a, b, c))))
    kept = []
    for choice in itertools.product(WIDENINGS, repeat=len(formats)):
        value = {f: w for f, w in zip(formats, choice) if w}
        profile = Profile("widening hypothesis", "", datapaths, widened_inputs=value, widened_inputs_provenance="hypothesis")
        if all(np.array_equal(_unsigned(inner_product(a, b, c, (fa, fb), acc, profile)), got)
               for fa, fb, acc, a, b, c, got in observed):
            kept.append(dict(zip(formats, choice)))
    vectors = sum(len(entry[-1]) for entry in observed)
    if not kept:
        raise Inconsistent(f"mixed fp8 inputs: no reading of {', '.join(formats)} (as themselves or widened to f16) "
                           f"reproduces the {vectors} directed mixed vectors")
    determined = {f: kept[0][f] for f in formats if len({h[f] for h in kept}) == 1}
    shown = set(determined.values())
    borrowed = shown.pop() if len(shown) == 1 else None
    chosen = next((h for h in kept if all(h[f] == borrowed for f in formats if f not in determined)), kept[0])
    value = {f: w for f, w in chosen.items() if w}
    open_formats = [f for f in formats if f not in determined]
    triples_text = ", ".join(f"{a} x {b} -> {acc}" for a, b, acc in triples)
    provenance = f"inferred from {vectors} directed mixed fp8 vectors ({triples_text})"
    if open_formats and determined:
        provenance += (f"; no vector shows how {', '.join(open_formats)} is read: read as "
                       f"{', '.join(sorted(determined))} is, by the same instruction")
    elif open_formats:
        provenance += "; no vector shows a widening: nothing is widened"
    return WideningInference(value, provenance, {"vectors": vectors, "kept": kept, "determined": determined,
                                                 "open": open_formats})
