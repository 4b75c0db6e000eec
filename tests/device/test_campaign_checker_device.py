"""The campaign's integer-checker reference on the GPU (`GpuReference`, NVRTC): the D it computes
from the oracle's operands of drawn Hopper programs of every modelled form equals the Python
model's, bit for bit, in the words the tensor-core kernel stores."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tcgen05_conformance.campaign.checker import GpuReference, checker_module, operands
from tcgen05_conformance.device.hopper_batch import pack_d
from tcgen05_conformance.oracles.numerics.matmul import evaluate
from tests.test_campaign_checker import launch_groups


def test_the_gpu_checker_computes_the_models_d(hopper_gpu):
    seconds: Counter = Counter()
    reference = GpuReference(hopper_gpu, checker_module(hopper_gpu, "sm_90a"), seconds)
    compared = 0
    for form, products in launch_groups(12, range(6)):
        ops = operands(products, {})
        assert np.array_equal(reference(ops, form), pack_d(form, np.stack(evaluate(products)))), (products[0].afmt, products[0].acc)
        compared += ops.inner_products
    assert compared > 10**5 and seconds["reference"] > 0
