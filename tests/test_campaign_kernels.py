"""Every kernel a Hopper campaign can launch (`tcgen05_conformance.generators.hopper_forms`) and `cache fill`, which
assembles them ahead of a run (`tcgen05_conformance.campaign.kernels`): the enumeration holds the form
of every instruction the campaign's strategy draws, each form once and legal; a fill assembles
what the folder lacks and nothing twice, and a form the assembler rejects is named without losing
the others."""

from __future__ import annotations

import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.core.instructions import WgmmaMma
from tcgen05_conformance.core.legality.check import check
from tcgen05_conformance.core.program import Program
from tcgen05_conformance.campaign import kernels as campaign_kernels
from tcgen05_conformance.campaign.run import TARGET
from tcgen05_conformance.device.kernel_cache import KernelCache
from tcgen05_conformance.device.ptx.kernels import hopper_form, hopper_kernel
from tcgen05_conformance.generators.hopper_forms import modelled_hopper_forms
from tcgen05_conformance.generators.programs import hopper_instructions
from tcgen05_conformance.generators.sampling import draw_examples, seed_only_draws
from tests.conftest import needs_assembler


def _form(op):
    return hopper_form(Program(TARGET, (op,)))


def test_every_drawn_instruction_has_an_enumerated_form():
    forms = {_form(op) for op in modelled_hopper_forms()}
    with seed_only_draws():
        drawn = draw_examples(hopper_instructions(forms="modelled"), 400, seed=1801)
    missing = [op for op in drawn if _form(op) not in forms]
    assert not missing, f"{len(missing)} drawn instructions have no enumerated form, e.g. {missing[0]}"


def test_the_enumerated_forms_are_legal_and_distinct():
    ops = modelled_hopper_forms()
    illegal = [(op, check(op, TARGET)) for op in ops if check(op, TARGET)]
    assert not illegal, illegal[:3]
    assert len({_form(op) for op in ops}) == len(ops)
    # both families and every wgmma and mma.sp input type (PTX ISA 9.7.15.5.2, 9.7.14.6.3) but 4-bit integers
    assert {op.atype for op in ops if isinstance(op, WgmmaMma)} == {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}
    assert {op.atype for op in ops if not isinstance(op, WgmmaMma)} == {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}


def _some_forms():
    """A form of each wgmma family and of mma.sp."""
    ops = modelled_hopper_forms()
    firsts = {}
    for op in ops:
        firsts.setdefault((type(op).__name__, op.atype), op)
    return list(firsts.values())[:6]


@needs_assembler
def test_a_fill_assembles_what_the_folder_lacks_once(tmp_path):
    forms = _some_forms()
    first = campaign_kernels.fill(str(tmp_path), 2, forms=lambda: forms[:3])
    assert (first["forms"], first["cached"], first["assembled"], first["failed"]) == (3, 0, 3, [])
    again = campaign_kernels.fill(str(tmp_path), 2, forms=lambda: forms)
    assert (again["forms"], again["cached"], again["assembled"], again["failed"]) == (6, 3, 3, [])
    cache = KernelCache(str(tmp_path))  # a campaign's producer: every form served from the folder
    for op in forms:
        cache.get(hopper_kernel(_form(op)), TARGET)
    assert (cache.hits, cache.assembled) == (6, 0)


@needs_assembler
def test_cache_fill_names_a_rejected_form_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    good = _some_forms()[:2]
    bad = WgmmaMma(n=12, k=16, dtype="f32", atype="f16", btype="f16")  # N = 12: no wgmma shape (9.7.15.5.2)
    monkeypatch.setenv("TCGEN05_CACHE", str(tmp_path))
    monkeypatch.setattr(campaign_kernels, "modelled_hopper_forms", lambda: [good[0], bad, good[1]])
    assert main(["cache", "fill", "--jobs", "1", "--json"]) == 1
    out, err = capsys.readouterr()
    done = json.loads(out)
    assert (done["forms"], done["assembled"], len(done["failed"])) == (3, 2, 1)
    assert "n=12" in done["failed"][0] and "\n" not in done["failed"][0]
    assert KernelCache(str(tmp_path)).info()["kernels"] == 2


def test_cache_fill_refuses_a_bad_job_count(capsys):
    with pytest.raises(SystemExit) as e:
        main(["cache", "fill", "--jobs", "0"])
    assert e.value.code == 2 and "--jobs" in capsys.readouterr().err
