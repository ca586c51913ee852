"""``openenv-anyio check``: exit codes, --only, --json (validated against REPORT_SCHEMA),
--junit (parses as XML), --expected-failures semantics, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from openenv_anyio.cli import main
from openenv_anyio.conformance.reports import REPORT_SCHEMA

from .conftest import EXTENSION_CASES
from .minimal_server import Flaws, MinimalServer, serve_in_thread


def check(*args: str) -> int:
    return main(["check", *args])


def test_correct_server_exits_0(minimal_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(minimal_url, "--frame-limit-mb", "1") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("47 cases: ")
    assert out.rstrip().endswith("PASSED")
    assert "\x1b[" not in out  # no colour when not a terminal


def test_required_failure_exits_1(openenv_core_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(openenv_core_url) == 1
    out = capsys.readouterr().out
    assert "WS-ERR-02" in out and out.rstrip().endswith("FAILED")


def test_only_runs_the_named_cases_and_groups(openenv_core_url: str, tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    assert check(openenv_core_url, "--only", "HTTP", "WS-ERR-01", "--json", str(report_file)) == 0
    report = json.loads(report_file.read_text())
    assert [c["id"] for c in report["cases"]] == [
        "WS-ERR-01",
        "HTTP-01",
        "HTTP-02",
        "HTTP-03",
        "HTTP-04",
        "HTTP-05",
        "HTTP-06",
        "HTTP-07",
        "HTTP-08",
    ]


def test_json_report_matches_its_schema(openenv_core_url: str, tmp_path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)
    report_file = tmp_path / "report.json"
    assert check(openenv_core_url, "--frame-limit-mb", "16", "--json", str(report_file)) == 1
    report = json.loads(report_file.read_text())
    jsonschema.validate(report, REPORT_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert report["passed"] is False
    failed = {c["id"]: c.get("reason") for c in report["cases"] if c["verdict"] in ("fail", "timeout")}
    assert set(failed) == {"WS-RESET-04", "WS-ERR-02", "WS-ERR-07", "SPEC-VEC-01"}, failed
    assert report["summary"]["fail"] == 4 and report["summary"]["total"] == 47
    assert report["setup"]["action"] == {"message": ""}
    binary = next(c for c in report["cases"] if c["id"] == "WS-ERR-07")
    assert binary["fails_run"] and any(e["close_code"] == 1000 for e in binary["evidence"])


def test_junit_report_parses_with_one_testcase_per_case(openenv_core_url: str, tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    assert check(openenv_core_url, "--junit", str(junit)) == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests", "0")) == 47
    failed = sorted(c.get("name", "").split()[0] for c in cases if c.find("failure") is not None)
    assert failed == ["WS-ERR-02", "WS-ERR-07"]  # required failures; WS-RESET-04 is optional
    assert suite.get("failures") == "2"
    skipped = {c.get("name", "").split()[0] for c in cases if c.find("skipped") is not None}
    # no telemetry, no Task API (501), no token given: not offered
    expected = {"WS-ERR-08", "UI-01", *EXTENSION_CASES, "VAL-01", "VAL-02", "VAL-03", "TASK-01", "SEC-01"}
    assert skipped == expected


def test_expected_failures_baseline(openenv_core_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "baseline.txt"
    baseline.write_text("# openenv-core 0.3.0 defects\nWS-ERR-02  # non-object JSON closes the session\nWS-ERR-07\n")
    assert check(openenv_core_url, "--expected-failures", str(baseline)) == 0
    assert "expected-failure" in capsys.readouterr().out

    baseline.write_text("WS-ERR-02\n")  # WS-ERR-07 still fails and is not listed
    assert check(openenv_core_url, "--expected-failures", str(baseline)) == 1

    baseline.write_text("WS-ERR-02\nWS-ERR-07\nWS-ERR-01  # passes: the baseline is stale\n")
    json_file = tmp_path / "r.json"
    assert check(openenv_core_url, "--expected-failures", str(baseline), "--json", str(json_file)) == 1
    case = next(c for c in json.loads(json_file.read_text())["cases"] if c["id"] == "WS-ERR-01")
    assert case["verdict"] == "pass" and case["baseline"] == "unexpected-pass" and case["fails_run"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://example.org"], "not an http(s):// or ws(s):// URL"),
        (["http://127.0.0.1:9", "--only", "NOPE-01"], "unknown case ID(s): NOPE-01"),
        (["http://127.0.0.1:9", "--action", "{oops"], "--action is not valid JSON"),
        (["http://127.0.0.1:9", "--action", "[1]"], "--action must be a JSON object"),
        (["http://127.0.0.1:9", "--expected-failures", "/nonexistent/baseline"], "cannot read /nonexistent/baseline"),
    ],
)
def test_bad_arguments_are_one_line_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(*args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_unknown_baseline_id_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "b.txt"
    baseline.write_text("WS-ERR-99\n")
    assert check("http://127.0.0.1:9", "--expected-failures", str(baseline)) == 2
    assert "line 1: 'WS-ERR-99' is not a case ID" in capsys.readouterr().err


def test_unreachable_server_is_a_one_line_error() -> None:
    """Run as a real process: exit 2, one line on stderr, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "check", "http://127.0.0.1:9", "--timeout", "5"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("openenv-anyio check: error: cannot reach http://127.0.0.1:9")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_list_prints_every_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert check("http://unused", "--list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 47 and lines[0].startswith("WS-CONN-01")


def test_a_loopback_server_is_never_checked_through_a_proxy(minimal_url: str, tmp_path: Path) -> None:
    """One proxy rule for the project (the client's): loopback is reached directly, even
    with HTTP_PROXY/ALL_PROXY pointing at a proxy that refuses everything."""
    report_file = tmp_path / "report.json"
    env = {
        **os.environ,
        "HTTP_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "ALL_PROXY": "http://127.0.0.1:9",
    }
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    done = subprocess.run(
        [sys.executable, "-m", "openenv_anyio", "check", minimal_url, "--only", "HTTP", "--json", str(report_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    verdicts = {c["id"]: c["verdict"] for c in json.loads(report_file.read_text())["cases"]}
    assert done.returncode == 0, (verdicts, done.stdout[-2000:])
    assert verdicts["HTTP-01"] == "pass"


def test_a_server_that_stops_answering_in_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stop is said once (terminal line, JSON ``stopped``); the cases after it are
    ``not-run`` in the JSON and skipped in JUnit; the case where it stopped is the failure."""
    report_file, junit = tmp_path / "report.json", tmp_path / "report.xml"
    with serve_in_thread(MinimalServer(Flaws(stops_answering_after=1))) as url:
        status = check(
            url,
            "--only",
            "WS-CONN-01",
            "WS-RESET-01",
            "HTTP",
            "--timeout",
            "2",
            "--json",
            str(report_file),
            "--junit",
            str(junit),
        )
    assert status == 1
    out = capsys.readouterr().out
    assert (
        out.count("the server stopped answering after WS-CONN-01: GET /health gave no answer within 2 s") == 2
    )  # case + summary
    assert "(found in WS-RESET-01); 8 later case(s) not run" in out
    assert out.count("not run: the server stopped answering") == 0  # not repeated on each case
    report = json.loads(report_file.read_text())
    jsonschema.validate(report, REPORT_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert report["stopped"] == {
        "case": "WS-RESET-01",
        "after": "WS-CONN-01",
        "probe": "GET /health gave no answer within 2 s",
    }
    assert report["summary"]["not-run"] == 8 and report["summary"]["timeout"] == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("skipped") == "8"


# --- a server the kit cannot check as asked: one line, exit 2, before any case ---------------


def _own_server(token: str | None = None):  # type: ignore[no-untyped-def]
    from openenv_anyio.server import EnvServer, ServerConfig

    from .test_own_server import KitEchoEnv

    return EnvServer(KitEchoEnv, ServerConfig(host="127.0.0.1", port=0, token=token)).run_in_thread()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (None, "the server requires a bearer token (GET /schema answered HTTP 401): pass --token or set OPENENV_TOKEN"),
        ("not-the-token", "the server refused the bearer token"),
    ],
)
def test_a_token_protected_server_without_its_token_is_one_line_not_30_fails(
    given: str | None, said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENENV_TOKEN", raising=False)
    with _own_server(token="kit-token-0123456789abcdef") as running:
        code = check(running.url, *(["--token", given] if given else []))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1 and said in captured.err, captured.err
    assert "FAIL" not in captured.out and "kit-token" not in captured.out + captured.err


def test_an_action_the_servers_schema_refuses_is_blamed_on_the_action(capsys: pytest.CaptureFixture[str]) -> None:
    with _own_server() as running:
        code = check(running.url, "--action", '{"message": 3}')
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1, captured.err
    assert "--action is not a valid action for this server" in captured.err and "/message" in captured.err
    assert "FAIL" not in captured.out


# --- the forms a user types ------------------------------------------------------------------


def test_only_takes_the_groups_its_help_promises(minimal_url: str, tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    check(minimal_url, "--only", "WS", "--json", str(report_file))
    ran = [c["id"] for c in json.loads(report_file.read_text())["cases"]]
    assert ran and all(case_id.startswith("WS-") for case_id in ran)
    assert {"WS-CONN-01", "WS-ERR-01", "WS-RESET-01", "WS-STEP-01"} <= set(ran)


def test_an_unknown_selector_names_the_groups_not_every_case_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert check("http://127.0.0.1:9", "--only", "NOPE") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown case ID(s): NOPE" in err
    assert "WS HTTP" in err or "HTTP MCP" in err  # the groups
    assert "WS-CONN-01" not in err and len(err) < 200, err


@pytest.mark.parametrize("form", ["only-then-url", "host-port"])
def test_the_url_may_follow_only_and_may_be_host_port(
    form: str, minimal_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_file = tmp_path / "report.json"
    address = minimal_url.removeprefix("http://")
    args = ["--only", "HTTP-01", minimal_url] if form == "only-then-url" else [address, "--only", "HTTP-01"]
    assert check(*args, "--json", str(report_file)) == 0, capsys.readouterr().err
    assert [c["id"] for c in json.loads(report_file.read_text())["cases"]] == ["HTTP-01"]


def test_only_without_a_url_shows_the_right_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert check("--only", "HTTP-01") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "openenv-anyio check URL [--only ID ...]" in err
