"""``deploy/kubernetes``: every manifest valid for Kubernetes (``kubernetes-validate``'s
bundled schemas, strict: no unknown fields; no cluster, no network), and the pieces agree
with each other and with ``openenv-anyio serve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from openenv_anyio.cli import build_parser

MANIFESTS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "kubernetes").glob("*.yaml"))
VERSION = "1.37.0"


def load(name: str) -> dict[str, Any]:
    (document,) = [path for path in MANIFESTS if path.name == name]
    loaded = yaml.safe_load(document.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_each_manifest_is_valid_kubernetes(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, VERSION, strict=True)


def test_a_broken_manifest_is_caught() -> None:
    broken = load("service.yaml")
    broken["spec"]["ports"][0]["port"] = "eighty"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSION, strict=True)


def test_the_container_runs_a_valid_serve_command_on_the_probed_port() -> None:
    container = load("deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    program, *argv = container["args"]
    assert program == "openenv-anyio"
    args = build_parser().parse_args(argv)  # every flag exists and parses
    assert args.host == "0.0.0.0" and args.workers == "auto"
    port = container["ports"][0]
    assert port["containerPort"] == args.port
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": port["name"]}  # HTTP-7
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": port["name"]}
    pod = load("deployment.yaml")["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/path"] == "/metrics"
    assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == args.port
    assert pod["spec"]["terminationGracePeriodSeconds"] > args.drain_timeout + args.shutdown_grace


def test_the_ingress_hashes_on_the_affinity_key_of_the_service() -> None:
    ingress, service = load("ingress.yaml"), load("service.yaml")
    annotations = ingress["metadata"]["annotations"]
    key = annotations["nginx.ingress.kubernetes.io/upstream-hash-by"]
    snippet = load("ingress-nginx-configmap.yaml")["data"]["http-snippet"]
    assert f"map $http_openenv_affinity {key}" in snippet
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > 20  # above the ping interval
    assert annotations["nginx.ingress.kubernetes.io/proxy-body-size"] == "100m"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"]["name"] in {port["name"] for port in service["spec"]["ports"]}
