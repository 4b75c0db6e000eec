"""A profile file's parameters stay within what a datapath can have (issue 32, item 3): values
the model would need gigabytes for (k_step 10**6 asked for 12.4 GiB) or would overflow on (huge
align_frac_bits, align_floor) are refused on one line, exit status 2, by every command that
takes --profile, before any work."""

import json

import pytest

from tcgen05_conformance.cli import main
from tcgen05_conformance.oracles.numerics.profiles import PROFILES
from tcgen05_conformance.oracles.numerics.vectors import RECORDINGS

# (parameter, a value outside what a datapath can have); the ranges: docs/numerics.md
OUT_OF_RANGE = [("k_step", 10**6), ("k_step", 1024), ("split_stride", 10**6), ("align_frac_bits", 10**6),
                ("align_frac_bits", 65), ("align_floor", -(10**6)), ("align_floor", 10**30), ("group_precision", 10**6)]


def _profile_file(tmp_path, parameter: str, value: int) -> str:
    data = PROFILES["exact"].as_dict()
    data["default"] = json.loads(json.dumps(PROFILES["sm_90a"].datapaths[("f16", "f32")].as_dict()))
    data["default"][parameter]["value"] = value
    if parameter == "k_step":
        data["default"]["split_ways"]["value"] = 1
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("parameter, value", OUT_OF_RANGE)
@pytest.mark.parametrize("command", [["run", "--count", "1"], ["vectors", "check", str(RECORDINGS / "H100" / "fp16")]])
def test_a_parameter_no_datapath_can_have_is_refused_on_one_line(tmp_path, capsys, parameter, value, command):
    path = _profile_file(tmp_path, parameter, value)
    try:
        status = main([*command, "--profile", path])
    except SystemExit as e:  # refused while parsing
        status = e.code
    assert status == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "deprecated" not in line]
    assert len(err) == 1 and f"$.default.{parameter}.value: {str(value)[:40]} is out of range" in err[0], err


def test_the_largest_step_a_datapath_can_have_loads(tmp_path):
    from tcgen05_conformance.oracles.numerics.profiles import MAX_K_STEP, get_profile

    assert get_profile(_profile_file(tmp_path, "k_step", MAX_K_STEP)).default.k_step == MAX_K_STEP
