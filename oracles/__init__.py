"""Reference models: semantics and numerics (the golden oracle)."""
