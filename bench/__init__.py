"""Benchmarks: each module exposes ``run(quick: bool) -> list[dict]`` and prints a table."""
