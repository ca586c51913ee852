"""Environments that ship with openenv-anyio: built-in examples and adapters.

- :mod:`openenv_anyio.envs.guess` — ``GuessNumberEnv``, a small number-guessing game with
  state, reward and termination (the README's example).
- :mod:`openenv_anyio.envs.echo` — ``EchoEnv``, the echo environment of the wire reference
  (interop tests).
"""
