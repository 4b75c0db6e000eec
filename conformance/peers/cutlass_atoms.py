"""The CUTLASS SM100/SM103 MMA atoms (cute/arch/mma_sm100_umma.hpp) as data: which tcgen05.mma form
each issues, and the candidate configurations tried on each. Which candidates CUTLASS can build is
decided by the compiler (its static assertions), never by this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcgen05_conformance.core.isa import mma as isa

MAJORS = ("K", "MN")
M_CANDIDATES = (32, 64, 128, 256)
N_CANDIDATES = tuple(range(8, 257, 8))

# Project type names -> CUTLASS element types. For .kind::f8f6f4 / mxf8f6f4 the 4/6-bit types are the
# "unpacksmem" forms (one element per byte in SMEM), which to_UMMAFormat maps to the f8f6f4 codes.
CPP_TYPES = {
    "f16": "half_t", "bf16": "bfloat16_t", "tf32": "tfloat32_t", "f32": "float", "s32": "int32_t",
    "s8": "int8_t", "u8": "uint8_t", "e4m3": "float_e4m3_t", "e5m2": "float_e5m2_t",
    "ue8m0": "float_ue8m0_t", "ue4m3": "float_ue4m3_t",
}
F8F6F4_CPP = {"e2m3": "cutlass::detail::float_e2m3_unpacksmem_t", "e3m2": "cutlass::detail::float_e3m2_unpacksmem_t",
              "e2m1": "cutlass::detail::float_e2m1_unpacksmem_t"}
MXF4_CPP = {"e2m1": "float_e2m1_t"}


@dataclass(frozen=True)
class Atom:
    """One CUTLASS MMA atom: `form` is how its template arguments are written ("abc": a, b, c, M,
    N, majors; "abcs": a ScaleC argument follows the majors; "abcsf": a, b, c, sf, M, N, majors;
    "abcsfv": then VS before the majors; "traits": a non-template atom whose MMA_Traits take the
    types). `vs`: scale-vector sizes (logical K elements per factor) tried."""

    name: str
    kind: str
    cta_group: int
    sparse: bool = False
    a_tmem: bool = False
    form: str = "abc"
    vs: tuple[int, ...] = ()
    k96: bool = False

    @property
    def scale_vectors(self) -> tuple[int, ...]:
        return self.vs or (0,)


def _family(prefix: str, kind: str, scaled: bool = True) -> list[Atom]:
    """The dense/TS/sparse, 1-SM/2-SM atoms of one kind family."""
    atoms = [Atom(f"SM100_MMA_{prefix}_SS", kind, 1), Atom(f"SM100_MMA_{prefix}_TS", kind, 1, a_tmem=True),
             Atom(f"SM100_MMA_{prefix}_SS_SPARSE", kind, 1, sparse=True), Atom(f"SM100_MMA_{prefix}_2x1SM_SS", kind, 2),
             Atom(f"SM100_MMA_{prefix}_2x1SM_TS", kind, 2, a_tmem=True),
             Atom(f"SM100_MMA_{prefix}_2x1SM_SS_SPARSE", kind, 2, sparse=True)]
    if scaled:
        atoms += [Atom(f"SM100_MMA_{prefix}_SS_SCALED", kind, 1, form="abcs"),
                  Atom(f"SM100_MMA_{prefix}_TS_SCALED", kind, 1, a_tmem=True, form="abcs"),
                  Atom(f"SM100_MMA_{prefix}_2x1SM_SS_SCALED", kind, 2, form="abcs"),
                  Atom(f"SM100_MMA_{prefix}_2x1SM_TS_SCALED", kind, 2, a_tmem=True, form="abcs")]
    return atoms


ATOMS: tuple[Atom, ...] = (
    *_family("F16BF16", "f16"),
    *_family("TF32", "tf32", scaled=False),
    *_family("S8", "i8", scaled=False),
    Atom("SM100_MMA_F8F6F4_SS", "f8f6f4", 1, form="traits"),
    Atom("SM100_MMA_F8F6F4_TS", "f8f6f4", 1, a_tmem=True),
    Atom("SM100_MMA_F8F6F4_SS_SPARSE", "f8f6f4", 1, sparse=True),
    Atom("SM100_MMA_F8F6F4_2x1SM_SS", "f8f6f4", 2, form="traits"),
    Atom("SM100_MMA_F8F6F4_2x1SM_TS", "f8f6f4", 2, a_tmem=True),
    Atom("SM100_MMA_F8F6F4_2x1SM_SS_SPARSE", "f8f6f4", 2, sparse=True),
    Atom("SM100_MMA_MXF8F6F4_SS", "mxf8f6f4", 1, form="abcsf", vs=(32,)),
    Atom("SM100_MMA_MXF8F6F4_SS_SPARSE", "mxf8f6f4", 1, sparse=True, form="abcsf", vs=(64,)),
    Atom("SM100_MMA_MXF8F6F4_2x1SM_SS", "mxf8f6f4", 2, form="abcsf", vs=(32,)),
    Atom("SM100_MMA_MXF8F6F4_2x1SM_SS_SPARSE", "mxf8f6f4", 2, sparse=True, form="abcsf", vs=(64,)),
    Atom("SM100_MMA_MXF4_SS", "mxf4nvf4", 1, form="abcsfv", vs=(16, 32)),
    Atom("SM100_MMA_MXF4NVF4_SS_SPARSE", "mxf4nvf4", 1, sparse=True, form="abcsfv", vs=(32, 64)),
    Atom("SM100_MMA_MXF4_2x1SM_SS", "mxf4nvf4", 2, form="abcsfv", vs=(16, 32)),
    Atom("SM100_MMA_MXF4NVF4_2x1SM_SS_SPARSE", "mxf4nvf4", 2, sparse=True, form="abcsfv", vs=(32, 64)),
    Atom("SM103::SM103_MXF4_ULTRA_SS_VS", "mxf4nvf4", 1, form="abcsfv", vs=(16, 32), k96=True),
    Atom("SM103::SM103_MXF4_ULTRA_2x1SM_SS_VS", "mxf4nvf4", 2, form="abcsfv", vs=(16, 32), k96=True),
)


@dataclass(frozen=True)
class TypeSet:
    """Element types of one configuration, as project names: A, B, D (and the scale factors)."""

    a: str
    b: str
    d: str
    sf: str | None = None


def type_sets(atom: Atom) -> tuple[TypeSet, ...]:
    """Every type combination the ISA allows for the atom's kind (Table 39 dtype/atype columns;
    scale types of Tables 54/55), the first being the atom's representative."""
    sets = []
    for d, atypes in isa.D_TYPES[atom.kind].items():
        btypes = atypes
        for a in atypes:
            for b in btypes:
                if a != b and atom.kind not in isa.MIXED_AB_KINDS:
                    continue
                if isa.BLOCK_SCALED_KINDS & {atom.kind}:
                    scale_types = ("ue8m0", "ue4m3") if atom.kind == "mxf4nvf4" else ("ue8m0",)
                    sets += [TypeSet(a, b, d, sf) for sf in scale_types]
                else:
                    sets.append(TypeSet(a, b, d))
    return tuple(sets)


def cpp_type(atom: Atom, name: str) -> str:
    if atom.kind in ("f8f6f4", "mxf8f6f4") and name in F8F6F4_CPP:
        return F8F6F4_CPP[name]
    if atom.kind in ("mxf4", "mxf4nvf4") and name in MXF4_CPP:
        return MXF4_CPP[name]
    return CPP_TYPES[name]


@dataclass(frozen=True)
class Candidate:
    """One configuration of one atom, as its MMA_Traits type."""

    atom: Atom
    types: TypeSet
    m: int
    n: int
    a_major: str
    b_major: str
    vs: int = 0
    a_negate: bool = False
    b_negate: bool = False

    @property
    def id(self) -> str:
        t = self.types
        parts = [self.atom.name.split("::")[-1], f"{t.a}x{t.b}->{t.d}" + (f"/{t.sf}" if t.sf else ""), f"m{self.m}", f"n{self.n}",
                 f"{self.a_major}{self.b_major}"]
        if self.vs:
            parts.append(f"vs{self.vs}")
        if self.a_negate or self.b_negate:
            parts.append(f"neg{int(self.a_negate)}{int(self.b_negate)}")
        return ".".join(parts)

    def atom_type(self) -> str:
        """The atom's C++ type (for "traits" atoms, the traits type itself)."""
        a = self.atom
        t = self.types
        ab = f"{cpp_type(a, t.a)}, {cpp_type(a, t.b)}, {CPP_TYPES[t.d]}"
        majors = f"UMMA::Major::{self.a_major}, UMMA::Major::{self.b_major}"
        negs = (f"UMMA::ScaleIn::{'Neg' if self.a_negate else 'One'}, UMMA::ScaleIn::{'Neg' if self.b_negate else 'One'}")
        if a.form == "traits":
            ic = "cute::integral_constant"
            return (f"MMA_Traits<{a.name}, {ab}, cute::C<{self.m}>, cute::C<{self.n}>, {ic}<UMMA::Major, UMMA::Major::{self.a_major}>, "
                    f"{ic}<UMMA::Major, UMMA::Major::{self.b_major}>, {ic}<UMMA::ScaleIn, UMMA::ScaleIn::{'Neg' if self.a_negate else 'One'}>, "
                    f"{ic}<UMMA::ScaleIn, UMMA::ScaleIn::{'Neg' if self.b_negate else 'One'}>>")
        if a.form == "abc":
            # S8 SS atoms take a saturate argument where the others take the negations.
            tail = "" if a.kind == "i8" and not a.a_tmem else f", {negs}"
            return f"{a.name}<{ab}, {self.m}, {self.n}, {majors}{tail}>"
        if a.form == "abcs":
            return f"{a.name}<{ab}, {self.m}, {self.n}, {majors}, 1u, {negs}>"
        sf = CPP_TYPES[t.sf]
        if a.form == "abcsf":
            return f"{a.name}<{ab}, {sf}, {self.m}, {self.n}, {majors}, {negs}>"
        return f"{a.name}<{ab}, {sf}, {self.m}, {self.n}, {self.vs}, {majors}, {negs}>"

    def traits_type(self) -> str:
        return self.atom_type() if self.atom.form == "traits" else f"MMA_Traits<{self.atom_type()}>"


def shape_candidates(atom: Atom) -> list[Candidate]:
    """Every M, N, majorness (and scale-vector size) with the atom's representative types."""
    first = type_sets(atom)[0]
    return [Candidate(atom, first, m, n, am, bm, vs)
            for vs in atom.scale_vectors for m in M_CANDIDATES for n in N_CANDIDATES for am in MAJORS for bm in MAJORS]


def type_candidates(atom: Atom, m: int, n: int, vs: int) -> list[Candidate]:
    """Every ISA type combination and negation at one shape the atom builds (K-major operands)."""
    sets = [Candidate(atom, t, m, n, "K", "K", vs) for t in type_sets(atom)]
    first = type_sets(atom)[0]
    if not (atom.kind == "i8" and not atom.a_tmem):  # the S8 SS atoms have no negate arguments
        sets += [Candidate(atom, first, m, n, "K", "K", vs, an, bn) for an, bn in ((True, False), (False, True), (True, True))]
    return sets
