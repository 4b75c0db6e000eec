"""The probe programs (probes/, docs/assumptions.md): one per assumption a program settles, each
loadable, byte for byte what `python -m tcgen05_conformance.probes.build` writes, legal or breaking exactly the rule it
means to, run or refused by the oracle as its label says, assembled for its target; and the
oracle's result checked against the implemented interpretation's prediction, computed here."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.instructions import Tcgen05Ld, Tcgen05St
from tcgen05_conformance.core.legality import check
from tcgen05_conformance.core.program import dumps, load
from tcgen05_conformance.core.state import MachineState, NotModelled, UndefinedBehaviour
from tcgen05_conformance.device.assembler import assemble
from tcgen05_conformance.device.ptx.kernels import UnsupportedProgram, kernel
from tcgen05_conformance.oracles.execute import run
from tcgen05_conformance.probes import build
from tcgen05_conformance.probes.mma import E2M1_VALUES, quarters
from tests.conftest import needs_assembler

ROOT = Path(__file__).resolve().parents[1]
ASSUMPTIONS = ROOT / "docs" / "assumptions.md"
PROBES = {p.name: p for p in build.probes()}
# Rows whose probe is not a tcgen05 / wgmma program, and why.
NOT_PROGRAMS = {"A-TCGEN05-DATAPATH": "numeric vectors through tcgen05.mma (oracles/numerics/probes.py)"}
LINK = re.compile(r"\[probes/([^\]]+\.json)\]\(\.\./probes/\1\)")


def table() -> dict[str, str]:
    """Assumption id -> its probe cell, from the table of docs/assumptions.md."""
    rows = {}
    for line in ASSUMPTIONS.read_text(encoding="utf-8").splitlines():
        if line.startswith("| A-"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert len(cells) == 6, line
            rows[cells[0]] = cells[4]
    return rows


def test_every_program_probe_of_the_table_links_its_files():
    rows = table()
    assert len(rows) >= 40
    linked = set()
    for assumption, cell in rows.items():
        files = LINK.findall(cell)
        if cell.startswith("none") or assumption in NOT_PROGRAMS:
            assert not files, assumption
            continue
        assert files and cell.endswith(")"), f"{assumption}: the probe column must end with its probes/ links"
        assert all(f.removesuffix(".json").split(".")[0] == assumption for f in files), assumption
        linked.update(files)
    assert linked == {f"{name}.json" for name in PROBES} == {p.name for p in build.FOLDER.glob("*.json")}


def test_build_writes_every_probe_and_removes_stale_files(tmp_path):
    (tmp_path / "A-GONE.json").write_text("{}")
    written = build.build(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{name}.json" for name in PROBES)
    assert all(path.read_text() == (build.FOLDER / path.name).read_text() for path in written)


@pytest.fixture(params=sorted(PROBES))
def probe(request):
    return PROBES[request.param]


def test_probe_file_round_trips_and_is_rebuilt_byte_for_byte(probe):
    path = build.FOLDER / f"{probe.name}.json"
    text = path.read_text(encoding="utf-8")
    p = load(str(path))
    assert dumps(p) + "\n" == text
    assert build.text(probe) == text
    assert p == probe.labelled()
    assert p.label.startswith(f"{probe.name}: ") and ("Oracle: refuses it" in p.label) == bool(probe.refusal)


def test_probe_breaks_only_the_rule_it_means_to(probe):
    p = probe.program
    assert [v.rule for op in p.ops for v in check(op, p.target)] == ([probe.breaks] if probe.breaks else [])


def test_oracle_runs_or_refuses_the_probe_with_its_one_line_error(probe):
    p = probe.program
    if probe.refusal:
        with pytest.raises(UndefinedBehaviour) as refused:
            run(p)
        assert str(refused.value) == f"ops[0] {p.ops[0].OP}: {probe.refusal}"
        return
    if probe.unmodelled:
        with pytest.raises(NotModelled) as open_question:
            run(p)
        assert str(open_question.value) == probe.unmodelled
        return
    PREDICTIONS[probe.assumption](run(p), p)


@needs_assembler
def test_probe_kernel_assembles_for_its_target(probe):
    p = probe.program
    if any(isinstance(op, (Tcgen05Ld, Tcgen05St)) for op in p.ops):
        with pytest.raises(UnsupportedProgram, match="may not contain tcgen05"):
            kernel(p)
        return
    outcome = assemble(kernel(p), p.target)
    assert outcome.ok, [d.message for d in outcome.diagnostics][:3]


def test_replay_runs_a_probe_file(capsys):
    assert main(["replay", str(build.FOLDER / "A-ZCMASK-SPANS.json"), "--backend", "oracle"]) == 0
    assert main(["replay", str(build.FOLDER / "A-LANE-ALIGN.json"), "--backend", "oracle"]) == 1
    assert "D reaches TMEM lane 159" in capsys.readouterr().out


# --- the implemented interpretation's predictions, computed independently of the oracle --------


def expect(actual: np.ndarray, expected) -> None:
    np.testing.assert_array_equal(actual, np.broadcast_to(expected, actual.shape))


def d32(result: MachineState, cta: int = 0) -> np.ndarray:
    """A CTA's TMEM words as f32."""
    return result.tmem[cta].view(np.float32)


def f32_bits(*x: float) -> list[int]:
    return np.array(x, np.float32).view(np.uint32).tolist()


def in_both_ctas(columns: int, expected):
    def check_d(result: MachineState, p) -> None:
        for cta in range(2):
            expect(d32(result, cta)[:, :columns], expected)
    return check_d


def d_equals(columns: int, expected):
    return lambda result, p: expect(d32(result)[:, :columns], expected)


LANE = np.arange(128)[:, None]
AB = quarters(128, 16, 7, 3) @ quarters(64, 16, 5, 11).T  # the product of the patterned f16 operands
SELECTED = np.repeat([33.0, 65, 129, 66], 8)  # 2^i0 + 16 x 2^i1 of metadata 0b0100, 0b1000, 0b1100, 0b1001
META_D = {m: 2 ** (m & 3) + 16 * 2 ** (m >> 2) for m in (0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b0110, 0b1110)}
LBO_SPLIT = np.where(np.arange(96) < 64, 1, -1) * np.array([1, 1.5, 2, 3, 4, 6])[np.arange(96) % 6]


def shifted(lanes: int):
    """Lanes below `lanes` tagged (lane % 32) << 16 | column, then lanes 1-31 moved down one."""
    def check_d(result: MachineState, p) -> None:
        lane, column = np.indices((128, 8))
        before = ((lane % 32) << 16 | column) * (lane < lanes)
        after = np.concatenate([before[:1], before[:31], before[32:]])
        expect(result.tmem[0][:, :8], after)
    return check_d


def e2m1_read_back(shift: int):
    """D = A through B = identity, each A code read >> `shift`."""
    def check_d(result: MachineState, p) -> None:
        r, k = np.indices((128, 32))
        code = np.asarray(E2M1_VALUES[(r + 3 * k) % 15], ml_dtypes.float4_e2m1fn).view(np.uint8) >> shift
        expect(d32(result)[:, :32], code.view(ml_dtypes.float4_e2m1fn).astype(np.float64))
    return check_d


def e3m2_read_back(shift: int):
    """D = A through B = identity, each A code (r + 3k) mod 32 read >> `shift` as e3m2 (OCP MX v1.0 FP6:
    exponent bias 3, 2 fraction bits, subnormals at 2^-2)."""
    def value(code: np.ndarray) -> np.ndarray:
        e, m = (code >> 2) & 7, code & 3
        return np.where(e == 0, m / 4 * 2.0 ** -2, (1 + m / 4) * 2.0 ** (e - 3.0))

    def check_d(result: MachineState, p) -> None:
        r, k = np.indices((128, 32))
        expect(d32(result)[:, :32], value(((r + 3 * k) % 32) >> shift))
    return check_d


def d16_high_half(result: MachineState, p) -> None:
    expect(result.tmem[0][:, :16], AB[:, :16].astype(np.float16).view(np.uint16))
    expect(result.tmem[0][:, 16:], 0xFFFFFFFF)


def ashift_row0(result: MachineState, p) -> None:
    expect(d32(result)[:, :16], 4.0 * np.maximum(LANE, 1))
    expect(result.tmem[0][:, 16:24], np.frombuffer(p.tmem[0].words, "<u4").reshape(128, -1)[:, 16:24])


def dol_cta2(result: MachineState, p) -> None:
    expect(d32(result, 0)[:, :32], 16.0)
    expect(d32(result, 1)[:, :32], np.where(LANE == 0, -1.0, 16.0))


def spmeta_half(result: MachineState, p) -> None:
    values = list(META_D)
    for r in range(64):
        lane = r % 16 + 32 * (r // 16)
        assert d32(result)[lane, :8].tolist() == [META_D[values[(lane + q) % 7]] for q in range(8)]


def sparse_cta2_m128(result: MachineState, p) -> None:
    """Layout C: CTA c's row r (global 64 c + r) at lane (r % 16) + 32 (r // 16), D = 16 (row + 1)(column + 1)."""
    for cta in range(2):
        d = d32(result, cta)[:, :32]
        r = np.arange(64)
        lanes = r % 16 + 32 * (r // 16)
        expect(d[lanes], 16.0 * (64 * cta + r[:, None] + 1) * (np.arange(32) + 1))
        expect(np.delete(d, lanes, axis=0), 0.0)


def unpack_high16(result: MachineState, p) -> None:
    expect(result.loads[0] >> 16, 0)
    expect(result.tmem[0][:32, 2:], 0xFFFFFFFF)


def ldred_f32(result: MachineState, p) -> None:
    red = np.stack([words[:, -1] for words in result.loads])  # min, min.NaN, max, max.NaN
    assert red[:, 0].tolist() == [0x80000000, 0x80000000, *f32_bits(2.0, 2.0)]
    assert red[:, 1].tolist() == [*f32_bits(-2.0), 0x7FFFFFFF, *f32_bits(1.0), 0x7FFFFFFF]
    expect(red[:, 2:], 0)


def cp_pair_source(result: MachineState, p) -> None:
    for cta in range(2):
        rows = ((np.arange(2048) % 128) | cta << 7).astype(np.uint8).reshape(128, 16)
        expect(result.tmem[cta][:, :4], rows.view("<u4"))


def hopper_d(result: MachineState, p) -> None:
    expect(result.hopper_d.view(np.float32), AB[:64, :16])


def wgmma_sparse_kmajor_atom(result: MachineState, p) -> None:
    """Metadata 0b0100 everywhere: stored element s of group j is logical column 4 j + s; B's K
    16-31 come from start + LBO, where the probe wrote them plus 8 (what the H100 read)."""
    a = ((np.arange(64)[:, None] * 7 + np.arange(16)[None, :] * 3) % 17 - 8) / 4
    b = ((np.arange(16)[:, None] * 5 + np.arange(32)[None, :] * 11) % 17 - 8) / 4
    b[:, 16:] += 8
    columns = (4 * np.arange(8)[:, None] + np.arange(2)).reshape(16)
    expect(result.hopper_d.view(np.float32), a @ b[:, columns].T)


def wgmma_sparse_metadata(result: MachineState, p) -> None:
    """The pair selector 1 reads (lanes 2-3) selects elements 0 and 1 of each group of four."""
    a = ((np.arange(64)[:, None] * 7 + np.arange(16)[None, :] * 3) % 17 - 8) / 4
    b = ((np.arange(16)[:, None] * 5 + np.arange(32)[None, :] * 11) % 17 - 8) / 4
    columns = (4 * np.arange(8)[:, None] + np.arange(2)).reshape(16)
    expect(result.hopper_d.view(np.float32), a @ b[:, columns].T)


def mma_sp_metadata(result: MachineState, p) -> None:
    """mma.sp: the pair selector 1 reads (lanes 2-3) selects elements 0 and 1 of each group of four."""
    a = ((np.arange(16)[:, None] * 7 + np.arange(16)[None, :] * 3) % 17 - 8) / 4
    b = ((np.arange(8)[:, None] * 5 + np.arange(32)[None, :] * 11) % 17 - 8) / 4
    columns = (4 * np.arange(8)[:, None] + np.arange(2)).reshape(16)
    expect(result.hopper_d.view(np.float32), a @ b[:, columns].T)


PREDICTIONS = {
    "A-ZCMASK-SPANS": d_equals(64, np.where(np.arange(64) % 4 == 3, 0.0, 16.0)),
    "A-MIXED-F16": d_equals(16, 36.0),
    "A-SFID-K96": in_both_ctas(16, 448.0),
    "A-MAXSHIFT": d_equals(64, AB),
    "A-SPSEL-F16-TF32": d_equals(32, SELECTED),
    "A-SDESC-FIXED53": d_equals(16, AB[:, :16]),
    "A-WGMMA-DESC": hopper_d,
    "A-TMEM-OWN-LANE": in_both_ctas(16, np.where(LANE < 64, 16.0, 32.0)),
    "A-LAYOUT-E-2x2": d_equals(32, 4.0 * (np.arange(32) + 1 + 32 * (LANE >= 64))),
    "A-CTA-PAIR-SPLIT": in_both_ctas(32, np.where(np.arange(32) < 16, 16.0, 0.0)),
    "A-SDESC-BASE-OFFSET": hopper_d,
    "A-LBO-ABSOLUTE-SPLIT": in_both_ctas(96, LBO_SPLIT),
    "A-SW128-32B": d_equals(32, np.where(LANE < 8, 1.0 + np.arange(32) + 32 * LANE, 0.0)),
    "A-F4F6-SMEM-PADDED": e2m1_read_back(0),
    "A-F4F6-TMEM-CONTAINER": e2m1_read_back(2),
    "A-F6-TMEM-CONTAINER": e3m2_read_back(1),
    "A-D16-HIGH-HALF": d16_high_half,
    "A-ASHIFT-ROW0": ashift_row0,
    "A-DOL-CTA2": dol_cta2,
    "A-SPMETA-HALF": spmeta_half,
    "A-SPSEL-COLUMNS": d_equals(32, SELECTED),
    # CUTLASS's sm_103 reading: row group g reads cells (g, 2), (g, 3), (g + 4, 0..3), each 2^(4 column + byte).
    "A-SF-K96-LAYOUT": in_both_ctas(16, 16.0 * (2.0 ** (4 * (LANE // 32))) * (4 + 8 + 15 * 2 ** 16)),
    "A-K96-SHAPES": d_equals(16, 96.0),
    "A-SPARSE-CTA2-M128": sparse_cta2_m128,
    "A-BLOCKSCALED-IDESC-BITS": d_equals(16, np.repeat([META_D[0b0100], META_D[0b1000]], 8)),
    "A-NO-ACCUMULATOR": lambda result, p: expect(result.tmem[0][:, :16], 0x80000000),
    "A-WS-MAXSHIFT": lambda result, p: expect(d32(result).reshape(128, 4, 64), AB[:, None]),
    "A-SHIFT-ROW0": shifted(32),
    "A-SHIFT-LANES": shifted(128),
    "A-SHIFT-DIR": shifted(32),
    "A-UNPACK-HIGH16": unpack_high16,
    "A-LDRED-F32": ldred_f32,
    "A-LDRED-DATA": lambda result, p: expect(result.loads[0][0], f32_bits(-1.0, -3.0, -2.0, -0.5, 3.0)),
    "A-LDRED-SCOPE": lambda result, p: expect(result.loads[0][[0, 16], -1], [9, 4]),
    "A-CP-PAIR-SOURCE": cp_pair_source,
    "A-WGMMA-SP-KMAJOR-ATOM": wgmma_sparse_kmajor_atom,
    "A-WGMMA-SP-METADATA": wgmma_sparse_metadata,
    "A-MMA-SP-METADATA": mma_sp_metadata,
}
