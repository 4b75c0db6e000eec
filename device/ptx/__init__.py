"""PTX text: single instructions (`instructions`) and whole kernels (`kernels`)."""
