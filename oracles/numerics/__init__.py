"""Bit-accurate numeric models of NVIDIA tensor-core inner products.

Public API:

* :func:`inner_product` - vectorised model of ``d = sum_k a_k * b_k + c`` on raw encodings;
* :func:`matmul` - the same over whole matrices, the oracle's arithmetic interface;
* :class:`MatrixProduct` / :func:`evaluate` - the products of many MMAs in vectorised calls;
* :data:`PROFILES` / :class:`Profile` / :class:`Datapath` - targets as data (``exact``,
  ``sm_90a``, ``sm_100a``) with per-parameter provenance;
* :data:`FORMATS` - number formats as data;
* :func:`from_binary32`, :func:`to_binary32`, :func:`f32_to_f16_rne` - conversions for the
  binary32-hex representation of the recorded vector files;
* :func:`check_vectors` / :class:`VectorFileError` - loader and checker of those files.

See docs/numerics.md for the model, the fitted parameters and the assumptions.
"""

from tcgen05_conformance.core.formats import FORMATS, FloatFormat, IntFormat, get_format

from .convert import NotRepresentable, f32_to_f16_rne, from_binary32, to_binary32
from .matmul import MatrixProduct, evaluate, matmul
from .model import inner_product
from .profiles import PROFILES, Datapath, Profile, get_profile
from .vectors import VectorFileError, check_vectors

__all__ = [
    "FORMATS",
    "FloatFormat",
    "IntFormat",
    "get_format",
    "PROFILES",
    "Profile",
    "Datapath",
    "get_profile",
    "inner_product",
    "matmul",
    "MatrixProduct",
    "evaluate",
    "from_binary32",
    "to_binary32",
    "f32_to_f16_rne",
    "NotRepresentable",
    "check_vectors",
    "VectorFileError",
]
