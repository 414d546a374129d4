"""Benchmarks, each a script run from the repository root as `python -m bench.NAME` (see
bench/README.md). They may import the library, the CLI and `peers`; nothing imports them but tests."""
