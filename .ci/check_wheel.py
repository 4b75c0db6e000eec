"""Check that a built wheel holds every file the installed package reads: each tracked file of the
repository folders that install as `tcgen05_conformance` (Python modules and the data read at run
time: C headers, probe programs, recorded vectors ...) at its installed path, and the licence.

    python .ci/check_wheel.py dist/tcgen05_conformance-1.0.0-py3-none-any.whl

What must be there comes from git (the tracked files), not from pyproject.toml's package-data, so
that a file the packaging forgets (oracles/numerics/checker.h, say) is missed here rather than on a
user's machine. Exit status 0 when nothing is missing, 1 naming each missing file, 2 on bad usage."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_folders(setup_py: Path = ROOT / "setup.py") -> dict[str, str]:
    """Each repository folder and the path it installs at, read from setup.py's FOLDERS (package ->
    folder), the one place the mapping is written."""
    for node in ast.parse(setup_py.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FOLDERS" for t in node.targets):
            return {folder: package.replace(".", "/") for package, folder in ast.literal_eval(node.value).items()}
    raise LookupError(f"{setup_py} assigns no FOLDERS")


FOLDERS = package_folders()


def installed_paths(tracked: list[str]) -> dict[str, str]:
    """The wheel path each tracked file of the package folders must have, keyed by that path, with
    the repository path it comes from as value."""
    wanted = {}
    for path in tracked:
        folder, _, rest = path.partition("/")
        if folder in FOLDERS and rest and "__pycache__" not in path:
            wanted[f"{FOLDERS[folder]}/{rest}"] = path
    return wanted


def tracked_files(root: Path = ROOT) -> list[str]:
    """The repository's tracked files that exist in the working tree."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", *FOLDERS], capture_output=True, check=True).stdout
    return [p for p in listed.decode().split("\0") if p and (root / p).is_file()]


def missing(wheel: Path, tracked: list[str]) -> list[str]:
    """Every file the wheel lacks, as "installed path (from repository path)"; the licence too."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    gaps = [f"{installed} (from {source})" for installed, source in sorted(installed_paths(tracked).items())
            if installed not in names]
    if not any(name.split("/")[0].endswith(".dist-info") and name.rsplit("/", 1)[-1] == "LICENSE" for name in names):
        gaps.append("LICENSE (in the .dist-info folder)")
    return gaps


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(".whl") or not Path(argv[0]).is_file():
        print("check_wheel: usage: check_wheel.py WHEEL (an existing .whl file)", file=sys.stderr)
        return 2
    tracked = tracked_files()
    gaps = missing(Path(argv[0]), tracked)
    for gap in gaps:
        print(f"check_wheel: missing from {Path(argv[0]).name}: {gap}")
    if not gaps:
        print(f"check_wheel: {Path(argv[0]).name} holds all {len(installed_paths(tracked))} files of the package folders and the licence")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
