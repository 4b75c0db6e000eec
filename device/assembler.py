"""The assembler as a legality authority: ptxas run in-process through nvJitLink (cuda-python),
no GPU needed. Many instructions are assembled in one module, one `.entry` each, and the
diagnostics are attributed back to instructions by line number."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from tcgen05_conformance.core.isa.targets import PTX_VERSION


class AssemblerUnavailable(RuntimeError):
    """cuda-python's nvJitLink bindings are not installed."""


@dataclass(frozen=True)
class Diagnostic:
    line: int | None
    message: str

    @property
    def rule(self) -> str | None:
        return rule_for_diagnostic(self.message)


@dataclass
class Assembly:
    ok: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    log: str = ""


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise AssemblerUnavailable(
            "the assembler needs cuda-python's nvJitLink: pip install 'tcgen05-conformance[compile]'"
            f" ({e})"
        ) from None
    return nvjitlink


def assembler_version() -> str:
    """The nvJitLink (ptxas) version, e.g. "13.5"."""
    major, minor = _nvjitlink().version()
    return f"{major}.{minor}"


_LINE = re.compile(r"ptxas application ptx input, line (\d+); (error|warning)\s*:\s*(.*)")


def _link(ptx: str, arch: str, name: str, *, keep_cubin: bool) -> tuple[bool, bytes, str]:
    """Run nvJitLink on one PTX module for `arch`: whether it linked, the cubin (when asked for
    and linked) and the error log (when it did not)."""
    nvjitlink = _nvjitlink()
    handle = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError:
            log = bytearray(nvjitlink.get_error_log_size(handle))
            nvjitlink.get_error_log(handle, log)
            return False, b"", log.decode(errors="replace").rstrip("\x00")
        if not keep_cubin:
            return True, b"", ""
        code = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, code)
        return True, bytes(code), ""
    finally:
        nvjitlink.destroy(handle)


def assemble(ptx: str, arch: str) -> Assembly:
    """Assemble one PTX module for `arch` (e.g. "sm_100a"): success and every diagnostic."""
    linked, _, log = _link(ptx, arch, "program.ptx", keep_cubin=False)
    if linked:
        return Assembly(True)
    diagnostics = []
    for text in log.splitlines():
        m = _LINE.match(text.strip())
        if m and m.group(2) == "error":
            diagnostics.append(Diagnostic(int(m.group(1)), m.group(3).strip()))
        elif text.strip() and "aborted due to errors" not in text and "NVJITLINK_ERROR" not in text:
            diagnostics.append(Diagnostic(None, text.strip()))
    return Assembly(False, diagnostics, log)


class LinkError(RuntimeError):
    """nvJitLink refused a module; the message holds its log."""


def cubin(ptx: str, arch: str) -> bytes:
    """A PTX module linked for `arch` (e.g. "sm_90a") by nvJitLink into a cubin: CPU only, so
    processes without a GPU (or without cuda-core) can assemble kernels ahead of their launch."""
    linked, code, log = _link(ptx, arch, "kernel.ptx", keep_cubin=True)
    if not linked:
        raise LinkError(" ".join(log.split()) or "nvJitLink failed")
    return code


def module_header(arch: str) -> str:
    return f".version {PTX_VERSION}\n.target {arch}\n.address_size 64\n"


def assemble_entries(bodies: Sequence[str], arch: str, preamble: str = "") -> list[Assembly]:
    """Assemble many kernel bodies (complete `.entry` texts) in one module; one result per body.

    A diagnostic is attributed to the body whose lines hold it. Diagnostics without a line (a
    fatal error) make the module split in halves until each body is judged alone.
    """
    if not bodies:
        return []
    lines = [module_header(arch), preamble]
    spans = []
    line_no = sum(part.count("\n") for part in lines) + 1
    for body in bodies:
        count = body.count("\n") + 1
        spans.append((line_no, line_no + count - 1))
        lines.append(body + "\n")
        line_no += count
    result = assemble("".join(lines), arch)
    if result.ok:
        return [Assembly(True) for _ in bodies]
    if any(d.line is None for d in result.diagnostics) or not result.diagnostics:
        if len(bodies) == 1:
            return [result]
        half = len(bodies) // 2
        return assemble_entries(bodies[:half], arch, preamble) + assemble_entries(bodies[half:], arch, preamble)
    outcomes = [Assembly(True) for _ in bodies]
    for d in result.diagnostics:
        for k, (lo, hi) in enumerate(spans):
            if lo <= d.line <= hi:
                outcomes[k].ok = False
                outcomes[k].diagnostics.append(Diagnostic(d.line - lo + 1, d.message))
                break
    return outcomes


# ptxas messages and the legality rule each one reports. Order matters: first match wins.
DIAGNOSTIC_RULES: tuple[tuple[str, str], ...] = (
    (r"Feature '\.kind::i8' not supported", "target.kind-i8"),
    (r"Instruction 'tcgen05\.ld\.red' not supported", "target.ld-red"),
    (r"FP6/FP4|Feature '\.kind::", "mma-sp.kind-target"),
    (r"not supported on \.target|cannot be compiled for architecture|requires .*sm_", "target.family"),
    (r"Illegal modifier '\.cta_group::2' for instruction 'tcgen05\.mma\.ws'", "mma.ws.cta-group"),
    (r"\.block_scale modifier required", "mma.block-scale.required"),
    (r"Modifier '\.kind::\w+' requires modifier '\.scale_vectorsize'", "mma.scale-vec.required"),
    (r"Modifier '\.kind::\w+' cannot be combined with modifier '\.(scale_vec|block1|block3)", "mma.scale-vec.kind"),
    (r"Modifier '\.kind::\w+' cannot be combined with modifier '\.block_scale'", "mma.block-scale.kind"),
    (r"cannot be combined with modifier '\.ashift'", "mma.ashift.collector"),
    (r"Illegal modifier '\.collector", "mma.collector.buffer"),
    (r"Illegal modifier '\.ashift' for instruction 'tcgen05\.mma\.ws'", "mma.ashift.ws"),
    (r"Illegal modifier '\.ashift'", "mma.ashift.a-tmem"),
    (r"Argument vector size mismatch for instruction 'tcgen05\.mma'", "mma.disable-output-lane.size"),
    (r"with 'arg scale-inp-d-imm'", "mma.scale-input-d.kind"),
    (r"out of range, expected to be in range \[0\.\.15\]", "mma.scale-input-d.range"),
    (r"tcgen05\.alloc|tcgen05\.dealloc", "alloc.columns"),
    (r"Illegal modifier '\.x\d+' for instruction 'tcgen05\.ld\.red'", "ld.red.num"),
    (r"Illegal modifier '\.(abs|NaN)' for instruction 'tcgen05\.ld\.red'", "ld.red.abs-nan"),
    (r"Illegal modifier '\.pack::16b' for instruction 'tcgen05\.ld\.red'", "ld.red.pack"),
    (r"Illegal matrix shape '\.\w+' for instruction 'tcgen05\.ld\.red'", "ld.red.shape"),
    (r"Modifier \.x\d+ not allowed", "ldst.num"),
    (r"Unexpected number of arguments specified for tcgen05\.(ld|st)", "ldst.split-offset"),
    (r"warptype|Modifier \.warpx", "cp.multicast"),
    (r"Unknown modifier '\.m64n", "wgmma.shape"),
    (r"Illegal modifier '\.satfinite' for instruction '(Sparse )?wgmma", "wgmma.satfinite"),
    (r"Unexpected instruction types specified for 'wgmma", "wgmma.types"),
    (r"wgmma\.mma_async.*expected to be -1", "wgmma.negate"),
    (r"Argument 4 of instruction 'Sparse wgmma", "wgmma.sparse-selector"),
    (r"Illegal matrix shape '\.m16n8k|Incorrect instruction type specified for Sparse mma with shape", "mma-sp.shape"),
    (r"Argument 6 of instruction 'Sparse mma'", "mma-sp.selector"),
    (r"Unexpected instruction types specified for 'mma'", "mma-sp.types"),
)


def rule_for_diagnostic(message: str) -> str | None:
    """The legality rule a ptxas diagnostic reports, when one of DIAGNOSTIC_RULES knows it."""
    for pattern, rule in DIAGNOSTIC_RULES:
        if re.search(pattern, message):
            return rule
    return None
