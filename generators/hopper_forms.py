"""Every instruction form the campaign's Hopper strategy can draw (`hopper_instructions(forms=
"modelled")`): each combination of the choices `instructions.wgmma` and `instructions.mma_sp` make,
with the values a batched kernel takes at run time (shared-memory descriptors, scale-d, sparsity
metadata) left at their defaults. Two instructions of one form share one kernel
(`tcgen05_conformance.device.ptx.kernels.hopper_form`), so this list is every kernel a campaign can launch: about 10^4,
each tens of milliseconds of nvJitLink, which `cache fill` assembles ahead of a run."""

from __future__ import annotations

import itertools

from tcgen05_conformance.core.instructions import MmaSp, WgmmaMma
from tcgen05_conformance.core.isa import hopper
from tcgen05_conformance.core.isa.targets import target as target_named


def modelled_hopper_forms(target: str = "sm_90a") -> list[WgmmaMma | MmaSp]:
    """The forms of every modelled wgmma (dense with A in shared memory or registers, sparse with A
    in shared memory) and mma.sp (but 4-bit integers) on `target`, each once."""
    return [*_wgmma_forms(), *_mma_sp_forms(target)]


def _either(allowed: bool, values: tuple, otherwise) -> tuple:
    """The choices of a field: `values` where the family has it, else its one fixed value."""
    return values if allowed else (otherwise,)


def _wgmma_forms() -> list[WgmmaMma]:
    """As `instructions.wgmma` draws them (PTX ISA 9.7.15.5.2: types, shapes, imm-scale, imm-trans,
    satfinite; 9.7.15.5.3: the sparsity selector)."""
    forms = []
    for name, fam in hopper.WGMMA_TYPES.items():
        pairs = [(a, b) for a in fam.types for b in (fam.types if fam.mixed else (a,))]
        for sparse, a_regs in ((False, False), (False, True), (True, False)):  # modelled: sparse A in shared memory
            trans_a = _either(fam.transpose and not a_regs, (0, 1), None)
            for (atype, btype), n, dtype, satfinite, scale_a, scale_b, ta, tb, selector in itertools.product(
                    pairs, fam.n, fam.dtypes, _either(fam.saturate, (False, True), False),
                    _either(fam.negate, (1, -1), 1), _either(fam.negate, (1, -1), 1), trans_a,
                    _either(fam.transpose, (0, 1), None),
                    hopper.WGMMA_SPARSE_SELECTORS[name] if sparse else (0,)):
                forms.append(WgmmaMma(n=n, k=fam.k_dense * (2 if sparse else 1), dtype=dtype, atype=atype, btype=btype,
                                      sparse=sparse, a_in_registers=a_regs, satfinite=satfinite,
                                      imm_scale_a=scale_a, imm_scale_b=scale_b, imm_trans_a=ta, imm_trans_b=tb,
                                      sparse_selector=selector))
    return forms


def _mma_sp_forms(target: str) -> list[MmaSp]:
    """As `instructions.mma_sp` draws them (PTX ISA 9.7.14.6.3), 4-bit integers left out as the
    modelled forms leave them."""
    sm = target_named(target).sm
    forms = []
    for name, fam in hopper.MMA_SP_SHAPES.items():
        if name == "i4" or (fam.feature == "f8" and sm < hopper.MMA_SP_F8_MIN_SM):
            continue
        for atype, dtype, k in itertools.product(fam.types, fam.dtypes, fam.ks):
            for btype, ordered, satfinite, selector in itertools.product(
                    fam.types if fam.mixed else (atype,), (False, True), _either(fam.saturate, (False, True), False),
                    hopper.mma_sp_selectors(name, k, dtype, silicon=True)):
                forms.append(MmaSp(k=k, dtype=dtype, ctype=dtype, atype=atype, btype=btype, ordered_metadata=ordered,
                                   satfinite=satfinite, sparse_selector=selector))
    return forms
