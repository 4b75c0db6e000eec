"""The readers of outside input under Hypothesis (issue 15): a malformed program file ends in a
program that loads and goes through the legality check, the oracle and the kernel text, or in a
one-line refusal naming the file; a damaged vector folder is checked whole or refused on one line.
Never a traceback. The 10,000-input measurement is `tcgen05-conformance fuzz` (reports/fuzz-input-readers/); here
a few hundred inputs each."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcgen05_conformance.harness.export import SCHEMA as EXPORT_SCHEMA
from tcgen05_conformance.fuzz.inputs import ACCEPTED, REFUSED, program_corpus, program_outcome, small_vector_folder, vector_outcome
from tcgen05_conformance.generators.malformed import CASE_SCHEMA, MANIFEST_FILE, malformed_programs, vector_damage
from tcgen05_conformance.oracles.numerics.vectors import MANIFEST
from tests.numerics.test_numerics_recorded import DATA

def test_the_fuzzed_case_files_are_those_export_writes():
    assert CASE_SCHEMA == EXPORT_SCHEMA


CORPUS = program_corpus(6, 0)  # the probes and six programs of `run`
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(data=malformed_programs(CORPUS))
def test_a_malformed_program_loads_or_is_refused_on_one_line(tmp_path_factory, data):
    assert program_outcome(data, tmp_path_factory.mktemp("program") / "case.json")[0] in (ACCEPTED, REFUSED)


@pytest.fixture(scope="module")
def vector_bases(tmp_path_factory):
    into = tmp_path_factory.mktemp("bases")
    return [small_vector_folder(p, into) for p in sorted((DATA / "B200").iterdir()) if p.is_dir()]


@FUZZ
@given(drawn=st.data(), damage=vector_damage())
def test_a_damaged_vector_folder_is_checked_whole_or_refused_on_one_line(tmp_path_factory, vector_bases, drawn, damage):
    base = drawn.draw(st.sampled_from(vector_bases))
    assert vector_outcome(base, damage, tmp_path_factory.mktemp("damaged") / "work", "sm_100a")[0] in (ACCEPTED, REFUSED)


def test_the_fuzzed_manifest_is_the_one_vectors_check_reads():
    assert MANIFEST_FILE == MANIFEST
