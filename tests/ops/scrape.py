"""Reading ``GET /metrics`` the way Prometheus does: prometheus-client's own text parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """One scrape: sample values by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        self.types: dict[str, str] = {}
        for family in text_string_to_metric_families(text):
            self.types[family.name] = family.type
            for sample in family.samples:
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(self, name: str, **labels: str) -> float:
        """The sample's value; a missing sample is an assertion failure naming it."""
        key = (name, frozenset(labels.items()))
        assert key in self.samples, f"no sample {name}{labels} in /metrics"
        return self.samples[key]

    def labelled(self, name: str, label: str) -> dict[str, float]:
        """Every sample of ``name`` by the value of ``label``."""
        return {dict(labels)[label]: value for (sample, labels), value in self.samples.items() if sample == name}


def scrape(base_url: str) -> Scrape:
    response = httpx.get(base_url + "/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return Scrape(response.text)
