"""The vector sources a `--backend` of `numerics infer` and `numerics agree` names
(`source_for_backend`): the model, silicon, a simulator over the line protocol, a plugin's factory,
or a folder of recorded vectors."""

from __future__ import annotations

from pathlib import Path

from tcgen05_conformance.numerics.sources import SimulatorSource, VectorSource

#: What `--instruction` may name per backend, the first being the default.
INSTRUCTIONS = {"hopper": ("wgmma", "mma.sync"), "blackwell": ("tcgen05",)}


def source_for_backend(spec: str, instruction: str | None = None, profile: str | None = None) -> VectorSource | str:
    """The vector source a `--backend` names: `oracle` (the numeric model computing with
    `profile`, in its variant for `instruction`), `hopper` (silicon: `instruction` wgmma or
    mma.sync) or `blackwell` (tcgen05), `sim:CMD` (a numeric simulator over the line protocol),
    `MODULE:FACTORY` (a callable given `profile=` that returns a VectorSource), or recorded vectors
    (`recorded:DIR`, DIR a folder or a GPU folder's name under the shipped recordings, or a folder
    given as it is), returned as the folder's path. ValueError (one line) for a spec that names
    none of these; SourceUnavailable when the silicon is not here."""
    from tcgen05_conformance.numerics.sources import GpuSource, ModelSource
    from tcgen05_conformance.oracles.numerics.profiles import for_instruction
    from tcgen05_conformance.oracles.numerics.vectors import RECORDINGS

    if instruction is not None and spec in INSTRUCTIONS and instruction not in INSTRUCTIONS[spec]:
        raise ValueError(f"--instruction {instruction}: the {spec} backend runs {' or '.join(INSTRUCTIONS[spec])}")
    if spec == "oracle":
        if profile is None:
            raise ValueError("--backend oracle computes with a numeric profile: give --profile (a name or a profile file)")
        return ModelSource(for_instruction(profile, instruction.replace(".", "_")) if instruction else profile)
    if spec in INSTRUCTIONS:
        return GpuSource(instruction or INSTRUCTIONS[spec][0])
    if spec == "ptxas":
        raise ValueError("--backend ptxas observes whether programs assemble, not the results of inner products")
    kind, _, arg = spec.partition(":")
    if kind == "sim" and arg:
        return SimulatorSource(arg)
    if kind == "recorded":
        path = Path(arg) if arg else RECORDINGS
        if arg and not path.exists() and (RECORDINGS / arg).exists():
            path = RECORDINGS / arg
        if not path.is_dir():
            raise ValueError(f"--backend {spec}: {path} is not a folder of recorded vectors (the shipped ones: "
                             f"{', '.join(sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir()))})")
        return str(path)
    if ":" not in spec and Path(spec).is_dir():
        return spec
    if kind and arg and "/" not in spec:
        return _plugin_source(kind, arg, profile)
    raise ValueError(f"--backend {spec!r}: expected oracle, hopper, blackwell, sim:CMD, MODULE:FACTORY, recorded:DIR or "
                     "a folder of recorded vectors")


def _plugin_source(module: str, factory: str, profile: str | None) -> VectorSource:
    """A plugin's vector source: `module.factory(profile=profile)`, which must evaluate inner
    products (`tcgen05_conformance.numerics.sources.VectorSource`)."""
    import importlib

    try:
        made = getattr(importlib.import_module(module), factory)(profile=profile)
    except (ImportError, AttributeError, TypeError) as e:
        raise ValueError(f"--backend {module}:{factory}: cannot make a vector source ({e})") from None
    missing = [m for m in ("pairs", "evaluate", "k", "provenance") if not callable(getattr(made, m, None))]
    if missing:
        raise ValueError(f"--backend {module}:{factory}: gave a {type(made).__name__}, not a vector source "
                         f"(no {', '.join(missing)}; see conformance/numerics/sources.py)")
    return made
