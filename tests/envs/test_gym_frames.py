"""Gymnasium frames for the dashboard: ``render_mode="rgb_array"`` answers carry ``frame``."""

from __future__ import annotations

import base64
import subprocess
import sys
import textwrap

from openenv_anyio.envs.gymnasium import GymnasiumEnv, png_data_url

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# In a fresh interpreter, so that pygame's renderer modules are not imported yet: eight
# sessions' threads render their first frame at the same moment.
CONCURRENT_FIRST_FRAMES = textwrap.dedent(
    """
    import os, threading
    for name, value in (("SDL_VIDEODRIVER", "dummy"), ("SDL_AUDIODRIVER", "dummy")):
        os.environ[name] = value
    from openenv_anyio.envs.gymnasium import GymnasiumEnv

    factory = GymnasiumEnv.bind("CartPole-v1", render_mode="rgb_array")
    envs = [factory() for _ in range(8)]
    start = threading.Barrier(len(envs))
    failures = []

    def first_frame(env):
        start.wait()
        try:
            env.reset(seed=1)
        except Exception as exc:
            failures.append(repr(exc))

    threads = [threading.Thread(target=first_frame, args=(env,)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(failures[:1])
    """
)


def test_frames_are_png_data_urls() -> None:
    env = GymnasiumEnv("CartPole-v1", render_mode="rgb_array")
    try:
        reply = env.reset(seed=3)
        prefix, _, data = reply["frame"].partition(",")
        assert prefix == "data:image/png;base64"
        assert base64.b64decode(data).startswith(PNG_SIGNATURE)
        assert "frame" in env.observation_schema["required"]
        assert "frame" in env.step({"action": 0})
    finally:
        env.close()
    assert "frame" not in GymnasiumEnv("CartPole-v1").reset(seed=3)


def test_png_data_url_of_a_small_array() -> None:
    import numpy

    pixels = numpy.zeros((2, 3, 3), dtype=numpy.uint8)
    pixels[0, 0] = (255, 0, 0)
    url = png_data_url(pixels)
    assert base64.b64decode(url.removeprefix("data:image/png;base64,")).startswith(PNG_SIGNATURE)


def test_sessions_rendering_their_first_frames_at_once_all_succeed() -> None:
    """Reproduces a race: threads importing pygame's surfarray at once saw a half-made module
    (AttributeError: no 'pixels3d') until ``bind`` rendered once up front."""
    for _ in range(3):  # the race shows in most fresh interpreters, not in every one
        result = subprocess.run(
            [sys.executable, "-c", CONCURRENT_FIRST_FRAMES], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip() == "[]"
