"""The oracle's tcgen05 facts against CUTLASS's own constructors (conformance/peers/cutlass.py,
docs/peers.md): every compared area runs over what CUTLASS builds with no unexplained difference,
every expected difference still occurs and names a ledger assumption, and the comparison fails when
the project's reading changes (the earlier K = 96 scale-factor reading is caught). Skipped, with the
reason, where no C++ compiler or no nvidia-cutlass package is installed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.layouts import tmem as tmem_layout
from tcgen05_conformance.peers import cutlass as peers
from tcgen05_conformance.peers import cutlass_toolchain as toolchain

try:
    TOOLCHAIN = toolchain.toolchain()
except toolchain.PeersUnavailable as e:
    pytest.skip(f"peer cross-check unavailable: {e}", allow_module_level=True)

ASSUMPTIONS = Path(__file__).resolve().parents[2] / "docs" / "assumptions.md"


@pytest.fixture(scope="module")
def report() -> dict:
    return peers.cross_check()


def fragments(c: peers.Candidate) -> dict:
    """The record mma.cpp prints for one configuration, with every fragment CUTLASS builds for it."""
    mask = peers.buildable_fragments(TOOLCHAIN, [c])[c.id]
    return toolchain.run(toolchain.build(TOOLCHAIN, "mma", peers._configs_header([peers._mma_line(c, mask)])))[0]


def test_every_area_compares_what_cutlass_builds_with_no_unexplained_difference(report):
    assert [a["area"] for a in report["areas"]] == list(peers.AREAS)
    for area in report["areas"]:
        assert area["configurations"] > 0 and area["facts"] >= area["configurations"], area["area"]
    unexplained = [(a["area"], d["key"], d["examples"]) for a in report["areas"] for d in a["differences"] if not d["expected"]]
    assert unexplained == [] and report["unexplained"] == 0


def test_every_ld_st_atom_of_the_header_is_compared(report):
    ldst = next(a for a in report["areas"] if a["area"] == "ldst")
    header = (TOOLCHAIN.includes[0] / "cute" / "atom" / "copy_traits_sm100.hpp").read_text()
    atoms = set(re.findall(r"struct Copy_Traits<(SM100_TMEM_(?:LOAD|STORE)_\w+)>", header))
    assert ldst["configurations"] == len(atoms) == 148


def test_k96_shapes_cutlass_builds_are_the_table_39_classes(report):
    # CUTLASS's SM103 atoms: cta_group::1 M = 128 and cta_group::2 M = 128, 256 (A-K96-SHAPES).
    built = report["shapes_per_atom"]
    assert built["SM103::SM103_MXF4_ULTRA_SS_VS"] > 0 and built["SM103::SM103_MXF4_ULTRA_2x1SM_SS_VS"] > 0
    legality = next(a for a in report["areas"] if a["area"] == "legality")
    assert not any("k96" in d["key"] for d in legality["differences"])


def test_every_expected_difference_occurs_and_names_a_ledger_assumption(report):
    seen = {(a["area"], d["key"]) for a in report["areas"] for d in a["differences"]}
    ledger = ASSUMPTIONS.read_text(encoding="utf-8")
    for e in peers.EXPECTED_DIFFERENCES:
        assert (e.area, e.key) in seen, f"stale expected difference {e.area} {e.key}"
        assert f"| {e.assumption} |" in ledger, e.assumption
        assert e.cutlass and e.project


def test_the_earlier_k96_scale_factor_reading_is_caught(monkeypatch):
    # Two columns per 32 indices (the project's reading before issue 13) against CUTLASS's collective.
    c = next(c for c in peers.mma_configurations(TOOLCHAIN)[0][next(a for a in peers.ATOMS if a.k96 and a.cta_group == 1)]
             if c.n == 128 and c.a_major == c.b_major == "K")
    record = fragments(c)
    agreed = peers.Area("tmem.scale", "")
    peers.compare_scale_factors(agreed, c, record)
    assert agreed.differences == [] and agreed.facts > 0
    monkeypatch.setattr(tmem_layout, "scale_factor_groups", lambda operand, count, splits, k96: 2 * -(-count // 32) if k96 else 1)
    earlier = peers.Area("tmem.scale", "")
    peers.compare_scale_factors(earlier, c, record)
    assert earlier.differences and all(d.key.startswith("scale.") for d in earlier.differences)


def test_a_changed_d_layout_is_caught(report):
    c = next(c for c in peers.mma_configurations(TOOLCHAIN)[0][peers.ATOMS[0]] if c.m == 64 and c.a_major == c.b_major == "K")
    record = fragments(c)
    swapped = dict(record["d"], addresses=np.roll(record["d"]["addresses"], 1).tolist())
    area = peers.Area("tmem.d", "")
    peers.compare_d(area, c, dict(record, d=swapped))
    assert area.differences and area.differences[0].key == "d.layout.F"


def test_cli_reports_json(capsys, report):
    assert main(["peers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unexplained"] == 0 and out["command"] == "tcgen05-conformance peers --json"
    assert [a["configurations"] for a in out["areas"]] == [a["configurations"] for a in report["areas"]]


def test_cli_runs_nothing_with_one_line_reason(capsys, monkeypatch):
    def unavailable():
        raise toolchain.PeersUnavailable("no C++ compiler (set CXX or install g++)")

    monkeypatch.setattr(toolchain, "toolchain", unavailable)
    assert main(["peers"]) == 5
    assert capsys.readouterr().err == "tcgen05-conformance: nothing ran: peers: no C++ compiler (set CXX or install g++)\n"
