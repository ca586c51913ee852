"""An environment package written the way upstream OpenEnv's docs lay one out (models, an
Environment subclass, ``server/app.py`` calling ``create_app``), for the tests that serve its
``app`` with ``openenv-anyio serve shout_env.server.app:app``. Runs on openenv-core 0.3 and
openenv 0.10 alike."""
