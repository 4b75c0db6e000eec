"""The release: one version, read by the package metadata, `--version`, the changelog and the
citation alike; the Apache-2.0 licence in full; and the wheel check of CI (.ci/check_wheel.py),
which must miss a file the packaging forgets."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

import tcgen05_conformance

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_distribution_has_the_packages_version():
    assert version("tcgen05-conformance") == tcgen05_conformance.__version__ == "1.0.0"


def test_version_prints_the_package_ptx_isa_and_suite_versions():
    done = subprocess.run([sys.executable, "-m", "tcgen05_conformance", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    # The kernels declare `.version 9.0`: the PTX ISA whose text the facts come from.
    assert done.stdout == (f"tcgen05-conformance {version('tcgen05-conformance')} (PTX ISA 9.0, "
                           f"suite {tcgen05_conformance.SUITE_VERSION})\n")


def test_the_changelogs_latest_release_and_the_citation_name_the_packages_version():
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    citation = (ROOT / "CITATION.cff").read_text()
    assert releases[0][0] == tcgen05_conformance.__version__
    assert re.search(r'^cff-version: 1\.2\.0$', citation, re.MULTILINE)
    assert re.search(rf'^version: "{re.escape(tcgen05_conformance.__version__)}"$', citation, re.MULTILINE)
    assert re.search(rf'^date-released: "{releases[0][1]}"$', citation, re.MULTILINE)


def test_the_licence_is_apache_2_0_in_full():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "9. Accepting Warranty or Additional Liability." in text and "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^license: Apache-2\.0$", (ROOT / "CITATION.cff").read_text(), re.MULTILINE)


# --- the wheel check -------------------------------------------------------------------------------


def _check_wheel():
    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / ".ci" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, "")
    return path


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    return _check_wheel().tracked_files()


def _complete(tracked: list[str]) -> list[str]:
    """A wheel's names with every tracked file of the package folders, spelled here from setup.py's mapping."""
    folders = {"conformance": "tcgen05_conformance", "oracles": "tcgen05_conformance/oracles",
               "generators": "tcgen05_conformance/generators", "device": "tcgen05_conformance/device",
               "probes": "tcgen05_conformance/probes"}
    names = [f"{folders[p.split('/')[0]]}/{p.split('/', 1)[1]}" for p in tracked]
    return names + ["tcgen05_conformance-1.0.0.dist-info/licenses/LICENSE", "tcgen05_conformance-1.0.0.dist-info/METADATA"]


def test_the_wheel_check_knows_every_folder_setup_py_installs():
    assert _check_wheel().package_folders() == {
        "conformance": "tcgen05_conformance", "oracles": "tcgen05_conformance/oracles",
        "generators": "tcgen05_conformance/generators", "device": "tcgen05_conformance/device",
        "probes": "tcgen05_conformance/probes"}


def test_the_wheel_check_passes_a_complete_wheel(tracked, tmp_path):
    assert "oracles/numerics/checker.h" in tracked and "probes/A-CP-DESC.json" in tracked
    assert _check_wheel().missing(_wheel(tmp_path / "x.whl", _complete(tracked)), tracked) == []


@pytest.mark.parametrize("dropped", ["tcgen05_conformance/oracles/numerics/checker.h", "tcgen05_conformance/generators/numeric_stream.h",
                                     "tcgen05_conformance/harness/report.py",
                                     "tcgen05_conformance-1.0.0.dist-info/licenses/LICENSE"])
def test_the_wheel_check_names_a_file_the_wheel_lacks(tracked, tmp_path, dropped):
    names = [n for n in _complete(tracked) if n != dropped]
    gaps = _check_wheel().missing(_wheel(tmp_path / "x.whl", names), tracked)
    assert len(gaps) == 1 and gaps[0].startswith(dropped.rsplit("/", 1)[-1] if "dist-info" in dropped else dropped)


def test_the_wheel_check_script_exits_1_naming_the_missing_file_and_2_on_bad_usage(tracked, tmp_path):
    wheel = _wheel(tmp_path / "x.whl", [n for n in _complete(tracked) if not n.endswith("checker.h")])
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "check_wheel.py"), str(wheel)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == "check_wheel: missing from x.whl: tcgen05_conformance/oracles/numerics/checker.h (from oracles/numerics/checker.h)\n"
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "check_wheel.py"), str(tmp_path / "nothing.whl")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
