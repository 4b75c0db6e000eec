"""Write every probe program as probes/<name>.json: `python -m tcgen05_conformance.probes.build`.

The files are `tcgen05_conformance.core.program.dumps` of each labelled program plus a newline, so the same
code writes the same bytes; JSON files of this folder that no probe names any more are removed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tcgen05_conformance.core.program import dumps
from tcgen05_conformance.probes.data_movement import data_movement_probes
from tcgen05_conformance.probes.mma import mma_probes
from tcgen05_conformance.probes.probe import Probe

FOLDER = Path(__file__).parent


def probes() -> list[Probe]:
    """Every probe: the matrix instructions', then the data-movement instructions'."""
    return mma_probes() + data_movement_probes()


def text(probe: Probe) -> str:
    """The file contents of one probe."""
    return dumps(probe.labelled()) + "\n"


def build(folder: Path = FOLDER) -> list[Path]:
    """Write every probe into `folder`; the paths written."""
    written = []
    for probe in probes():
        path = folder / f"{probe.name}.json"
        path.write_text(text(probe), encoding="utf-8")
        written.append(path)
    for stale in set(folder.glob("*.json")) - set(written):
        stale.unlink()
    return written


def main() -> int:
    for path in build():
        print(path.relative_to(FOLDER.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
