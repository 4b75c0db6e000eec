"""Probe programs: for each assumption of docs/assumptions.md that a program can settle on silicon,
one program (JSON in this folder) whose result differs between the interpretations, with what
each predicts in its label. `python -m tcgen05_conformance.probes.build` writes them; `tcgen05-conformance replay
probes/<id>.json --backend ...` runs one.
"""
