"""`spec/v1/asyncapi.yaml` refers to every frame schema and passes the official AsyncAPI parser.

The parser runs from ``tools/asyncapi`` (``npm ci --prefix tools/asyncapi`` installs it; CI
does). Without it the validation test fails rather than skips: the check must not go quiet.
"""

from __future__ import annotations

import posixpath
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from .spec_copy import REPO, VERSION_DIR

ASYNCAPI = VERSION_DIR / "asyncapi.yaml"
VALIDATOR = REPO / "tools" / "asyncapi" / "validate.mjs"
DRAFT_07 = "application/schema+json;version=draft-07"

#: What the protocol answers to each client request (WS-ORDER-1, WS-CLOSE-1).
REPLIES = {
    "frames/reset.json": {"frames/observation.json", "frames/error.json"},
    "frames/step.json": {"frames/observation.json", "frames/error.json"},
    "frames/state.json": {"frames/state-reply.json", "frames/error.json"},
    "frames/close.json": None,
    "frames/mcp.json": {"frames/mcp-reply.json", "frames/error.json"},
    "frames/validation-open.json": {"frames/validation-opened.json", "frames/error.json"},
    "frames/validation-read.json": {"frames/validation.json", "frames/error.json"},
}
#: WS /mcp carries bare JSON-RPC (no frame envelope): request -> response.
MCP_SOCKET_REPLIES = {"jsonrpc/request.json": {"jsonrpc/response.json"}}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return yaml.safe_load(ASYNCAPI.read_text(encoding="utf-8"))


def _local(document: Mapping[str, Any], ref: str) -> Any:
    """Follow an in-document ``#/...`` reference."""
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _deref(document: Mapping[str, Any], node: Any) -> Any:
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        node = _local(document, node["$ref"])
    return node


def _file_refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref
        for value in node.values():
            yield from _file_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _file_refs(value)


def _payload_file(document: Mapping[str, Any], message: Any) -> str:
    payload = _deref(document, message)["payload"]
    assert payload["schemaFormat"] == DRAFT_07
    return posixpath.normpath(payload["schema"]["$ref"])


def test_every_frame_schema_is_referenced() -> None:
    document = yaml.safe_load(ASYNCAPI.read_text(encoding="utf-8"))
    referenced = {posixpath.normpath(ref) for ref in _file_refs(document)}
    frames = {p.relative_to(VERSION_DIR).as_posix() for p in (VERSION_DIR / "frames").glob("*.json")}
    assert frames, "no frame schemas found"
    assert sorted(frames - referenced) == [], "frame schemas missing from asyncapi.yaml"
    assert all((VERSION_DIR / ref).is_file() for ref in referenced), referenced


def test_every_message_payload_is_a_draft_07_ref_to_a_frame(document: dict[str, Any]) -> None:
    messages = document["components"]["messages"]
    assert messages
    for name, message in messages.items():
        assert set(message["payload"]["schema"]) == {"$ref"}, f"{name}: payload must be a $ref, not a copy"
        assert _payload_file(document, message).startswith(("frames/", "jsonrpc/")), name


def test_channels_and_request_operations(document: dict[str, Any]) -> None:
    assert document["asyncapi"].startswith("3.")
    addresses = {channel["address"] for channel in document["channels"].values()}
    assert addresses == {"/ws", "/ws/ui", "/mcp"}
    requests: dict[str, Any] = {}
    socket_requests: dict[str, Any] = {}
    for operation in document["operations"].values():
        channel = _deref(document, operation["channel"])
        frames = {_payload_file(document, m) for m in operation["messages"]}
        if operation["action"] == "send" and channel["address"] == "/mcp":
            (request,) = frames
            socket_requests[request] = {_payload_file(document, m) for m in operation["reply"]["messages"]}
        elif operation["action"] == "send":
            assert channel["address"] == "/ws"
            (frame,) = frames
            reply = operation.get("reply")
            requests[frame] = {_payload_file(document, m) for m in reply["messages"]} if reply else None
        elif channel["address"] == "/ws/ui":
            assert frames <= {"frames/state-update.json", "frames/session-closed.json"}
    assert requests == REPLIES
    assert socket_requests == MCP_SOCKET_REPLIES


def _run_validator(document: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node (>= 18) is needed to validate asyncapi.yaml with the official AsyncAPI parser")
    if not (VALIDATOR.parent / "node_modules" / "@asyncapi" / "parser").is_dir():
        pytest.fail("the AsyncAPI parser is not installed: run `npm ci --prefix tools/asyncapi`")
    return subprocess.run([node, str(VALIDATOR), str(document)], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_the_official_parser_accepts_the_document() -> None:
    result = _run_validator(ASYNCAPI.relative_to(REPO))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid AsyncAPI 3.0.0" in result.stdout


def test_the_official_parser_rejects_a_broken_frame_schema(tmp_path: Path) -> None:
    """The validator really resolves the frame files and checks them as draft-07 schemas."""
    copy = tmp_path / "v1"
    shutil.copytree(VERSION_DIR, copy, ignore=shutil.ignore_patterns("examples"))
    reset = copy / "frames" / "reset.json"
    reset.write_text(reset.read_text(encoding="utf-8").replace('"minimum": 0', '"minimum": "zero"'), encoding="utf-8")

    result = _run_validator(copy / "asyncapi.yaml")

    assert result.returncode == 1, result.stdout + result.stderr
    assert "reset.json" in result.stdout and "minimum" in result.stdout and "INVALID" in result.stdout
