"""The Task API (PROTOCOL.md TASK-1 to TASK-4, as upstream OpenEnv serves it): an
environment's splits and tasks under /{env}/..., 501 without task methods, a typed error for
every bad request, answers within 1 MiB; a reset picks the task."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from openenv_anyio.envs.openenv_core import OpenEnvCoreEnv
from tests.server.conftest import running
from tests.validation.envs import BrokenTaskEnv, CoreQuizEnv, DiceEnv, HugeTaskEnv, QuizEnv
from tests.validation.replay import TIMEOUT, Plan, replay


@pytest.fixture
def quiz() -> Iterator[httpx.Client]:
    with running(QuizEnv, max_concurrent_envs=2) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        yield http


def test_splits_counts_and_tasks_of_our_env_api(quiz: httpx.Client) -> None:
    assert quiz.get("/list_environments").json() == ["QuizEnv"]
    assert quiz.get("/QuizEnv/splits").json() == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
    assert quiz.get("/quizenv/splits").status_code == 200  # the name is matched case-insensitively
    assert quiz.post("/QuizEnv/num_tasks", json={"split": "train"}).json() == {"num_tasks": 4}
    assert quiz.post("/QuizEnv/task", json={"split": "test", "index": 1}).json() == {
        "task": {"id": "test-1", "question": "1 * 1"}
    }
    assert quiz.post("/QuizEnv/tasks", json={"split": "train"}).json() == {
        "tasks": [{"id": "train-0", "question": "0 + 0"}],  # async def: awaited
        "env_name": "QuizEnv",
    }


@pytest.mark.parametrize(
    "method, path, body, status, words",
    [
        ("GET", "/OtherEnv/splits", None, 404, "unknown environment"),
        ("POST", "/QuizEnv/num_tasks", {"split": "dev"}, 400, "unknown split 'dev'"),
        ("POST", "/QuizEnv/task", {"split": "train", "index": 4}, 400, "no task 4 in split 'train'"),
        ("POST", "/QuizEnv/task", {"split": "train", "index": -1}, 422, "greater than or equal to 0"),
        ("POST", "/QuizEnv/task", {"split": "train", "index": 10**30}, 422, "valid integer"),
        ("POST", "/QuizEnv/task", {"split": "train", "index": "1"}, 422, "valid integer"),
        ("POST", "/QuizEnv/task", {"split": "train"}, 422, "Field required"),
        ("POST", "/QuizEnv/num_tasks", {"split": "train", "limit": 1}, 422, "Extra inputs"),
        ("POST", "/QuizEnv/num_tasks", ["train"], 422, "JSON object"),
        ("POST", "/QuizEnv/task_range", {"split": "train"}, 501, "get_task_range is not supported"),
    ],
)
def test_every_bad_request_is_a_typed_error(
    quiz: httpx.Client, method: str, path: str, body: object, status: int, words: str
) -> None:
    reply = quiz.request(method, path, json=body)
    assert reply.status_code == status, reply.text
    assert words in json.dumps(reply.json()["detail"])
    assert quiz.post("/QuizEnv/num_tasks", json={"split": "test"}).json() == {"num_tasks": 2}  # nothing else affected


def test_a_body_that_is_not_json_is_refused(quiz: httpx.Client) -> None:
    reply = quiz.post("/QuizEnv/num_tasks", content=b"{split:", headers={"Content-Type": "application/json"})
    assert reply.status_code == 422 and reply.json()["detail"][0]["type"] == "json_invalid"


def test_an_env_without_tasks_answers_501() -> None:
    with running(DiceEnv) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        for reply in (
            http.get("/DiceEnv/splits"),
            http.post("/DiceEnv/num_tasks", json={"split": "train"}),
            http.post("/DiceEnv/task", json={"split": "train", "index": 0}),
        ):
            assert reply.status_code == 501 and "not supported" in reply.json()["detail"]


def test_an_answer_over_1_mib_and_a_failing_env_are_refused_without_their_text() -> None:
    with running(HugeTaskEnv) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        reply = http.post("/HugeTaskEnv/task", json={"split": "train", "index": 0})
        assert reply.status_code == 500 and "1024 KiB limit" in reply.json()["detail"]
    with (
        running(BrokenTaskEnv, expose_errors=False) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as http,
    ):
        broken = http.post("/BrokenTaskEnv/num_tasks", json={"split": "train"})
        assert broken.status_code == 500 and "offline" not in broken.text and broken.json()["error_id"]
        assert http.post("/BrokenTaskEnv/tasks", json={"split": "train"}).status_code == 501  # NotImplementedError


def test_the_task_api_is_served_in_production_mode_too() -> None:
    with running(QuizEnv, mode="production") as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
        assert http.post("/QuizEnv/num_tasks", json={"split": "test"}).json() == {"num_tasks": 2}


def test_a_reset_picks_the_task_by_split_index_and_seed() -> None:
    with running(QuizEnv) as server:
        answers = replay(server, Plan({"split": "test", "index": 1, "seed": 9, "episode_id": "q"}, [{"answer": 1}]))
    reset, _, step, _ = (json.loads(text) for text in answers)
    assert reset["data"]["observation"] == {"question": "1 * 1", "task_id": "test-1", "seed": 9}
    assert step["data"]["reward"] == 1.0


def test_the_openenv_core_adapter_passes_upstreams_task_methods_through() -> None:
    with (
        running(OpenEnvCoreEnv.wrap(CoreQuizEnv)) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as http,
    ):
        assert http.get("/CoreQuizEnv/splits").json() == [
            {"name": "train", "type": "train"},
            {"name": "test", "type": "test"},
        ]
        assert http.post("/CoreQuizEnv/num_tasks", json={"split": "train"}).json() == {"num_tasks": 4}
        assert http.post("/CoreQuizEnv/task", json={"split": "test", "index": 0}).json() == {"task": {"id": "test-0"}}
        assert http.post("/CoreQuizEnv/task_range", json={"split": "train", "start": 1, "stop": 3}).json() == {
            "tasks": [{"id": "train-1"}, {"id": "train-2"}]
        }
        assert http.post("/CoreQuizEnv/tasks", json={"split": "train"}).status_code == 501
        answers = replay(server, Plan({"split": "test", "index": 1, "seed": 2, "episode_id": "q"}))
    assert json.loads(answers[0])["data"]["observation"]["total"] == 1  # the index reached the env's reset
