"""The geometry of one tcgen05.mma: its instruction descriptor decoded (Tables 44-45), the Table 39
shape class it belongs to (which fixes K) and the data-path layout of D (9.7.16.10.5)."""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.encoding import idesc as idesc_codec
from tcgen05_conformance.core.instructions import Tcgen05Mma
from tcgen05_conformance.core.isa import mma as isa
from tcgen05_conformance.core.layouts.tmem import DataPath, data_path
from tcgen05_conformance.core.state import UndefinedBehaviour


@dataclass(frozen=True)
class MmaShape:
    """The decoded geometry of one MMA."""

    kind: str
    d: idesc_codec.InstrDescriptor
    k: int
    dp: DataPath

    @property
    def k_stored(self) -> int:
        return self.k // 2 if self.d.sparse else self.k


def shape_of(op: Tcgen05Mma) -> MmaShape:
    """The MMA's shape; UndefinedBehaviour when its descriptor names no Table 39 shape or a type
    code Tables 42-44 do not define."""
    d = idesc_codec.decode(op.kind, op.idesc)
    unnamed = [f"{field} code {name[1:]}" for field, name in (("atype", d.atype), ("btype", d.btype), ("dtype", d.dtype))
               if name.startswith("?")]
    if unnamed:
        raise UndefinedBehaviour(f"tcgen05.mma.kind::{op.kind} descriptor has {', '.join(unnamed)}, which name no type "
                                 "(PTX ISA 9.7.16.4.2, Tables 42-44)")
    c = isa.shape_class_for(op.kind, op.ws, op.cta_group, d.sparse, d.m, d.k96)
    if c is None or d.n not in c.n:
        raise UndefinedBehaviour(f"tcgen05.mma.kind::{op.kind} M={d.m} N={d.n} is not a Table 39 shape")
    return MmaShape(op.kind, d, c.k, data_path(d.m, op.cta_group, d.sparse, op.ws))
