"""Reports and evidence details: colour only when asked, truncated previews, baseline parsing."""

from __future__ import annotations

import pytest

from openenv_anyio.conformance.baseline import BaselineError, parse_baseline
from openenv_anyio.conformance.driver import Target
from openenv_anyio.conformance.evidence import preview, validate_server_frame
from openenv_anyio.conformance.reports import render_terminal
from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync


def test_terminal_colour_only_when_asked(minimal_url: str) -> None:
    report = run_checks_sync(CheckOptions(minimal_url, only=["HTTP-01", "WS-CAP-01"]))
    plain = render_terminal(report)
    coloured = render_terminal(report, colour=True)
    assert "\x1b[" not in plain and "\x1b[32m" in coloured
    assert plain.splitlines()[-1].startswith("2 cases: 1 pass, 1 informational")


def test_preview_truncates_and_notes_length() -> None:
    assert preview("short") == "short"
    long = "x" * 1000
    assert preview(long) == "x" * 300 + "... (1000 chars)"
    assert preview(b"\x00" * 1000).endswith("... (1000 bytes)")
    assert preview(b"\x01\x02") == "0x0102"


def test_received_frames_are_explained_by_pointer_and_keyword() -> None:
    value, faults = validate_server_frame("/ws", '{"type":"state","data":{"episode_id":null,"step_count":-1}}')
    assert value["type"] == "state"
    assert [(f.pointer, f.keyword) for f in faults] == [("/data/step_count", "minimum")]
    _, faults = validate_server_frame("/ws", "not json")
    assert faults[0].keyword == "json"
    _, faults = validate_server_frame("/ws/ui", '{"type":"observation","data":{}}')
    assert faults  # not a UI frame
    _, faults = validate_server_frame("/ws", b"{}")
    assert faults[0].keyword == "binary"


@pytest.mark.parametrize(
    ("url", "http", "ws"),
    [
        ("http://h:1", "http://h:1", "ws://h:1"),
        ("ws://h:1/ws", "http://h:1", "ws://h:1"),
        ("https://h/prefix/", "https://h/prefix", "wss://h/prefix"),
        ("wss://h/prefix/ws/", "https://h/prefix", "wss://h/prefix"),
    ],
)
def test_target_urls(url: str, http: str, ws: str) -> None:
    assert Target.from_url(url) == Target(http, ws)


def test_baseline_parsing() -> None:
    text = "# comment\n\nws-err-02   # lower case is fine\nWS-ERR-07\n"
    assert parse_baseline(text, ["WS-ERR-02", "WS-ERR-07"]) == {"WS-ERR-02": "lower case is fine", "WS-ERR-07": ""}
    with pytest.raises(BaselineError, match="line 2: 'NOPE' is not a case ID"):
        parse_baseline("WS-ERR-02\nNOPE\n", ["WS-ERR-02"])
