"""Registers and local memory of the checker's kernels (this tree's source), by NVRTC for sm_90a."""
import sys, tempfile, cupy
from tcgen05_conformance.device.check_kernels import compile_cubin
from tcgen05_conformance.numerics.gpu_checker import checker_kernels_source
path = tempfile.mktemp(suffix=".cubin")
open(path, "wb").write(compile_cubin(checker_kernels_source(), "sm_90a"))
module = cupy.RawModule(path=path)
for name in sys.argv[1:]:
    f = module.get_function(name)
    print(name, "registers", f.num_regs, "local bytes", f.local_size_bytes, "shared bytes", f.shared_size_bytes)
