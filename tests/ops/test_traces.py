"""OpenTelemetry spans (``ServerConfig.traces``), read with the SDK's in-memory exporter: a
session span continuing the agent's trace from the handshake's ``traceparent`` (sent by our
client), a span per request, and the environment's own call inside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from websockets.sync.client import connect

from openenv_anyio.client import EnvClient, RequestValidationError
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import EnvServer, RunningServer, ServerConfig
from tests.server.conftest import TIMEOUT, ask, wait_for


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def spans() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def server(spans: InMemorySpanExporter) -> Iterator[RunningServer]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    config = ServerConfig(port=0, traces=True, validate_outbound=True, shutdown_grace_s=2.0)
    with EnvServer(EchoEnv, config, tracer_provider=provider).run_in_thread() as running:
        yield running


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in spans.get_finished_spans() if span.name == name]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


@pytest.mark.anyio
async def test_session_continues_the_agents_trace(server: RunningServer, spans: InMemorySpanExporter) -> None:
    agent = TracerProvider()  # the agent's own tracing, apart from the server's
    agent_spans = InMemorySpanExporter()
    agent.add_span_processor(SimpleSpanProcessor(agent_spans))
    with agent.get_tracer("agent").start_as_current_span("rollout"):
        async with EnvClient(server.url) as env:
            await env.reset(episode_id="traced")
            await env.step({"message": "hi"})
            with pytest.raises(RequestValidationError):
                await env.step({"nope": 1})
            await env.state()
    wait_for(lambda: len(named(spans, "openenv.session")) == 1)
    (rollout,) = agent_spans.get_finished_spans()
    (session,) = named(spans, "openenv.session")
    assert session.context.trace_id == rollout.context.trace_id and child_of(session, rollout)
    assert session.attributes is not None and session.attributes["openenv.close_code"] == 1000
    resets, steps, states = named(spans, "openenv.reset"), named(spans, "openenv.step"), named(spans, "openenv.state")
    assert (len(resets), len(steps), len(states)) == (1, 2, 1)
    assert all(child_of(span, session) for span in resets + steps + states)
    assert steps[0].attributes is not None and steps[0].attributes["openenv.episode_id"] == "traced"
    assert "openenv.request_id" in steps[0].attributes
    refused = steps[1]
    assert refused.attributes is not None and refused.attributes["openenv.error_code"] == "VALIDATION_ERROR"
    assert [event.name for event in refused.events] == ["openenv.error"]
    env_steps = named(spans, "env.step")
    assert len(env_steps) == 1 and child_of(env_steps[0], steps[0])  # the refused action never reached the env
    assert child_of(named(spans, "env.reset")[0], resets[0]) and child_of(named(spans, "env.state")[0], states[0])
    assert all(span.status.status_code is not StatusCode.ERROR for span in spans.get_finished_spans())


def test_without_traceparent_the_session_starts_a_trace(server: RunningServer, spans: InMemorySpanExporter) -> None:
    with connect("ws" + server.url.removeprefix("http") + "/ws", open_timeout=TIMEOUT) as ws:
        ask(ws, {"type": "reset"})
    wait_for(lambda: len(named(spans, "openenv.session")) == 1)
    (session,) = named(spans, "openenv.session")
    assert session.parent is None
    assert session.attributes is not None and session.attributes["client.address"].startswith("127.0.0.1:")
    (reset,) = named(spans, "openenv.reset")
    assert child_of(reset, session)


def test_serve_traces_console_prints_the_spans() -> None:
    import json
    import signal

    from serve_process import serve_process

    with serve_process("openenv_anyio.envs.echo:EchoEnv", "--traces", "console", capture_stdout=True) as served:
        with connect(served.ws_url, open_timeout=TIMEOUT) as ws:
            ask(ws, {"type": "reset"})
            ask(ws, {"type": "step", "data": {"message": "hi"}})
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0
    text, decoder, exported = "".join(served.stdout), json.JSONDecoder(), []
    position = 0
    while text[position:].strip():  # one JSON object per span, back to back
        span, position = decoder.raw_decode(text, len(text) - len(text[position:].lstrip()))
        exported.append(span)
    by_name = {span["name"]: span for span in exported}
    assert {"openenv.session", "openenv.reset", "openenv.step", "env.step"} <= by_name.keys()
    session = by_name["openenv.session"]
    assert by_name["openenv.step"]["parent_id"] == session["context"]["span_id"]
