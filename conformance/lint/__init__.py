"""PTX text people hold, read by the legality rules: `lint` verdicts on `.ptx` modules and the inline
asm of CUDA sources (`verdicts`), `import` of a straight-line tcgen05 sequence into a program
(`program_import`), and the measurements behind them against the assembler (`agreement`,
`spellings`).
"""

from __future__ import annotations

from tcgen05_conformance.lint.verdicts import lint, format_text, LintInputError
from tcgen05_conformance.lint.program_import import import_ptx, PtxImportError

__all__ = ["LintInputError", "PtxImportError", "format_text", "import_ptx", "lint"]
