"""Entry points for trainers: :mod:`openenv_anyio.integrations.trl` (TRL's ``environment_factory``)."""
