"""The conformance kit: certify any server against the OpenEnv protocol (``openenv-anyio check``).

Numbered cases (``cases.py``) drive a server with raw frames (``driver.py``, trio +
trio-websocket), record every frame as evidence (``evidence.py``), and conclude pass,
non-strict, fail, timeout, not applicable or informational (``verdicts.py``) under a
per-case timeout (``runner.py``). Reports: terminal, JSON, JUnit XML (``reports.py``); an
expected-failures baseline (``baseline.py``); a pytest plugin (``pytest_plugin.py``).

Import the submodules directly; this package imports nothing heavy on purpose.
"""
