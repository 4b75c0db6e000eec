"""Code generation (PTX), compilation (nvJitLink, in-process ptxas) and launch on GPUs."""
