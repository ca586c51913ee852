"""Serve targets -> environment factories (``openenv_anyio.envs.loading.resolve_env_target``).

Every bad target is an ``EnvTargetError`` (a ValueError) with a one-line message.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from adapter_samples import EchoAction, EchoEnv, PlainEnv, make_plain_env

from openenv_anyio.envs.errors import ActionRejected, EnvTargetError
from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.envs.loading import resolve_env_target, resolve_serve_target
from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory for throwaway modules; sys.modules is restored afterwards (sys.path by conftest)."""
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    return tmp_path


def _write(directory: Path, source: str) -> str:
    name = f"target_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(source)
    return name


def _refused(target: str, **kwargs: str) -> str:
    with pytest.raises(EnvTargetError) as caught:
        resolve_env_target(target, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, ValueError)
    return message


def test_gymnasium_ids() -> None:
    factory = resolve_env_target("gymnasium:CartPole-v1")
    assert isinstance(factory, type) and issubclass(factory, GymnasiumEnv)
    env = factory()
    assert env.reset(seed=0)["done"] is False
    env.close()
    assert issubclass(resolve_env_target(" gymnasium:AdapterTest/GridWalk-v0 "), GymnasiumEnv)
    assert issubclass(resolve_env_target("gymnasium:adapter_samples:AdapterTest/GridWalk-v0"), GymnasiumEnv)


def test_unknown_gymnasium_ids_list_close_matches() -> None:
    assert _refused("gymnasium:CartPol-v1").startswith(
        "Gymnasium has no environment 'CartPol-v1'; close matches: CartPole-v1"
    )
    assert "pprint_registry" in _refused("gymnasium:Qwertyuiop-v9")


def test_a_gymnasium_environment_that_cannot_be_made() -> None:
    message = _refused("gymnasium:AdapterTest/Broken-v0")
    assert (
        message
        == "cannot make gymnasium:AdapterTest/Broken-v0: RuntimeError: the simulator is not available see the log"
    )


def test_openenv_core_classes_and_factories_are_wrapped() -> None:
    factory = resolve_env_target("adapter_samples:EchoEnv")
    assert isinstance(factory, type) and issubclass(factory, OpenEnvCoreEnv)
    assert factory.action_model is EchoAction
    env = factory()
    assert isinstance(env.env, EchoEnv)
    env.close()
    assert issubclass(resolve_env_target("adapter_samples:make_echo_env"), OpenEnvCoreEnv)
    assert _refused("adapter_samples:UntypedEnv").startswith("cannot tell the Action model of UntypedEnv: ")


def test_gymnasium_env_classes_are_wrapped() -> None:
    factory = resolve_env_target("adapter_samples:GridWalkEnv")
    assert issubclass(factory, GymnasiumEnv) and factory.metadata["name"] == "GridWalkEnv"


def test_other_classes_and_factories_are_returned_as_they_are() -> None:
    assert resolve_env_target("adapter_samples:PlainEnv") is PlainEnv
    assert resolve_env_target("adapter_samples:make_plain_env") is make_plain_env


def test_dotted_attributes(module_dir: Path) -> None:
    name = _write(
        module_dir,
        "class Outer:\n    class Inner:\n        def reset(self): ...\n        def step(self, action): ...\n",
    )
    factory = resolve_env_target(f"{name}:Outer.Inner", app_dir=str(module_dir))
    assert factory.__qualname__ == "Outer.Inner"
    assert (
        _refused(f"{name}:Outer.Innr", app_dir=str(module_dir))
        == f"'{name}.Outer' has no attribute 'Innr'; did you mean Inner?"
    )


@pytest.mark.parametrize("target", ["CartPole-v1", "mymodule", ":Env", "module:", ""])
def test_a_target_without_module_and_attribute(target: str) -> None:
    assert _refused(target).startswith(f"bad environment target {target!r}: expected MODULE:ATTR")


def test_a_missing_module() -> None:
    assert (
        _refused("no_such_module_xyz:Env")
        == "module 'no_such_module_xyz' not found (is it installed, or on the Python path?)"
    )
    assert _refused("no_such_package_xyz.server:Env").startswith("module 'no_such_package_xyz.server' not found")
    assert _refused("json.no_such_submodule:Env").startswith("module 'json.no_such_submodule' not found")


def test_an_import_error_inside_the_module_is_not_a_missing_module(module_dir: Path) -> None:
    name = _write(module_dir, "import dependency_that_is_not_installed_xyz\nclass Env: pass\n")
    message = _refused(f"{name}:Env", app_dir=str(module_dir))
    assert message == f"importing '{name}' failed: No module named 'dependency_that_is_not_installed_xyz'"


def test_a_module_that_fails_while_importing(module_dir: Path) -> None:
    broken = _write(module_dir, "def broken(:\n    pass\n")
    assert _refused(f"{broken}:Env", app_dir=str(module_dir)).startswith(f"importing '{broken}' failed: SyntaxError: ")
    raising = _write(module_dir, "raise RuntimeError('no config\\nfound')\n")
    assert (
        _refused(f"{raising}:Env", app_dir=str(module_dir))
        == f"importing '{raising}' failed: RuntimeError: no config found"
    )


def test_app_dir_puts_modules_beside_it_on_the_path(module_dir: Path) -> None:
    name = _write(module_dir, "def make():\n    return None\n")
    assert _refused(f"{name}:make", app_dir=None).startswith(f"module '{name}' not found")
    assert resolve_env_target(f"{name}:make", app_dir=str(module_dir)).__name__ == "make"


def test_modules_in_the_current_directory_are_found_by_default(
    module_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _write(module_dir, "def make():\n    return None\n")
    monkeypatch.chdir(module_dir)
    assert resolve_env_target(f"{name}:make").__name__ == "make"
    assert sys.path[0] == str(module_dir.resolve())


def test_a_missing_attribute_suggests_close_names() -> None:
    assert (
        _refused("adapter_samples:EchoEnvv") == "'adapter_samples' has no attribute 'EchoEnvv'; did you mean EchoEnv?"
    )
    assert _refused("adapter_samples:Zzz") == "'adapter_samples' has no attribute 'Zzz'"


def test_an_attribute_that_is_not_callable() -> None:
    assert (
        _refused("adapter_samples:settings")
        == "adapter_samples:settings is a dict, not an environment class or factory"
    )
    assert _refused("adapter_samples:echo_instance") == (
        "adapter_samples:echo_instance is an EchoEnv instance, not an environment class or factory "
        "(pass the class, not an instance)"
    )


# --- apps built by upstream's create_app (tests/interop/shout_env, on openenv-core 0.3) ---

SHOUT_APPS = str(Path(__file__).resolve().parents[1] / "interop")


def test_an_upstream_app_gives_its_declared_models_limit_and_name() -> None:
    from openenv.core.env_server.types import State

    target = resolve_serve_target("shout_env.server.app:app", app_dir=SHOUT_APPS)
    from shout_env.models import (  # importable once resolved
        ShoutAction,
        ShoutObservation,
    )
    from shout_env.server.shout_environment import ShoutEnvironment

    app, factory = target.app, target.factory
    assert app is not None and app.factory is ShoutEnvironment and app.release.startswith("openenv-core 0.3")
    assert (app.max_concurrent_envs, app.session_timeout_s, app.production) == (2, None, False)
    assert issubclass(factory, OpenEnvCoreEnv) and factory.MAX_CONCURRENT_SESSIONS == 2
    assert (factory.action_model, factory.observation_model, factory.state_model) == (
        ShoutAction,
        ShoutObservation,
        State,
    )
    assert factory.metadata["name"] == "ShoutEnvironment"  # what upstream's /metadata says
    assert (
        resolve_env_target("shout_env.server.app:app", app_dir=SHOUT_APPS).action_schema
        == ShoutAction.model_json_schema()
    )


def test_an_upstream_app_s_timeout_and_mode() -> None:
    timed = resolve_serve_target("shout_env.server.app:timed_app", app_dir=SHOUT_APPS).app
    assert timed is not None and timed.session_timeout_s == 1.0 and not timed.production
    production = resolve_serve_target("shout_env.server.app:production_app", app_dir=SHOUT_APPS).app
    assert production is not None and production.production and production.max_concurrent_envs == 2


def test_an_upstream_app_s_action_model_refuses_what_it_refuses() -> None:
    factory = resolve_env_target("shout_env.server.app:app", app_dir=SHOUT_APPS)
    env = factory()
    try:
        env.reset()
        with pytest.raises(ActionRejected) as caught:
            env.step({"message": "quiet"})
        assert "must be upper case" in str(caught.value)
        assert env.step({"message": "OK"}).observation["echoed"] == "OK"
    finally:
        env.close()


def test_an_asgi_app_upstream_did_not_build_is_refused() -> None:
    assert _refused("adapter_samples:plain_fastapi_app") == (
        "adapter_samples:plain_fastapi_app is an ASGI application (FastAPI) that upstream OpenEnv's "
        "create_app did not build: serve the environment class or factory instead (MODULE:MyEnvironment)"
    )
    assert "is an ASGI application (function)" in _refused("adapter_samples:asgi_function")


def test_a_module_without_the_app() -> None:
    assert _refused("shout_env.server.app:ap", app_dir=SHOUT_APPS) == (
        "'shout_env.server.app' has no attribute 'ap'; did you mean app?"
    )
