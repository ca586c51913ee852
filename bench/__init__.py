"""Side-by-side benchmarks: openenv-anyio against the real OpenEnv (openenv-core).

Run ``python -m bench [--quick] [--json FILE] [--only SCENARIO ...]`` from the repository
root. See ``bench/README.md`` for the scenarios.
"""
