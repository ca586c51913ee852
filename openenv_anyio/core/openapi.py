"""The OpenAPI 3.1 document of a server's HTTP surface, generated from the spec (``HTTP-9``).

OpenAPI 3.1 speaks JSON Schema 2020-12, so the bodies are the spec's own schemas (the data of
the ``reset`` and ``observation`` frames, the JSON-RPC request and response), inlined from
``spec/v1`` rather than typed again, next to the served environment's action, observation
and state schemas. In production mode (``HTTP-10``) the simulation routes ``/reset``,
``/step`` and ``/state`` are absent, as they are from the server. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import jsonschema_rs

from .spec import SPEC_VERSION, Spec, load_spec

__all__ = ["OPENAPI_VERSION", "STEP_REQUEST_OPTIONS", "openapi_document"]

OPENAPI_VERSION: Final = "3.1.0"
#: ``POST /step``'s members besides ``action`` (``HTTP-4``): upstream's step request takes
#: them and refuses a ``timeout_s`` not above 0 or a ``request_id`` over 255 characters; other
#: members are allowed (and ignored)
STEP_REQUEST_OPTIONS: Final[Mapping[str, Any]] = {
    "timeout_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
    "request_id": {"type": ["string", "null"], "maxLength": 255},
}
_JSON: Final = "application/json"
_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def _standalone(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A schema fit to sit under ``components/schemas``: references inlined where possible.

    A recursive schema keeps its ``$ref``s into its own ``$defs``; it gets an ``$id`` so they
    resolve inside it rather than against the OpenAPI document.
    """
    inlined = dict(jsonschema_rs.dereference(dict(schema), offline=True))
    inlined.pop("$schema", None)
    inlined.pop("$id", None)
    if '"$ref"' in json.dumps(inlined):
        inlined["$id"] = f"urn:openenv-anyio:schema:{name}"
    else:
        inlined.pop("$defs", None)
    return inlined


def _spec_part(spec: Spec, relative: str, *pointer: str) -> dict[str, Any]:
    found: Any = spec.dereferenced(relative)
    for part in pointer:
        found = found[part]
    value: dict[str, Any] = dict(found)
    for key in ("$schema", "$id", "$defs"):
        value.pop(key, None)
    return value


def _body(name: str) -> dict[str, Any]:
    return {"required": True, "content": {_JSON: {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def _answer(description: str, name: str | None = None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    shape = {"$ref": f"#/components/schemas/{name}"} if name is not None else dict(schema or {"type": "object"})
    return {"description": description, "content": {_JSON: {"schema": shape}}}


_UNPROCESSABLE: Final = {
    "description": "The body or the action does not match its schema (HTTP-4).",
    "content": {_JSON: {"schema": {"$ref": "#/components/schemas/ValidationFailure"}}},
}


def openapi_document(
    *,
    title: str,
    version: str,
    description: str,
    env_schemas: Mapping[str, Mapping[str, Any]],
    production: bool = False,
    spec: Spec | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of one server.

    ``env_schemas`` holds the environment's ``action``, ``observation``, ``state`` and
    (optionally) ``reset_observation`` JSON Schemas (what ``GET /schema`` answers);
    ``version`` becomes ``info.version``.
    """
    spec = spec or load_spec()
    schemas: dict[str, Any] = {
        "Action": _standalone(env_schemas["action"], "action"),
        "Observation": _standalone(env_schemas["observation"], "observation"),
        "ResetObservation": _standalone(
            env_schemas.get("reset_observation", env_schemas["observation"]), "reset_observation"
        ),
        "State": _standalone(env_schemas["state"], "state"),
        "SchemaResponse": _spec_part(spec, "http/schema-response.json"),
        "MetadataResponse": _spec_part(spec, "http/metadata-response.json"),
        "JsonRpcRequest": _spec_part(spec, "jsonrpc/request.json"),
        "JsonRpcResponse": _spec_part(spec, "jsonrpc/response.json"),
        "ValidationFailure": {
            "type": "object",
            "required": ["detail"],
            "properties": {"detail": {"type": "array", "items": {"type": "object"}}},
        },
    }
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "summary": "Liveness (HTTP-1)",
                "operationId": "health",
                "responses": {
                    "200": _answer(
                        "Healthy.",
                        schema={
                            "type": "object",
                            "required": ["status"],
                            "properties": {"status": {"const": "healthy"}},
                        },
                    )
                },
            }
        },
        "/ready": {
            "get": {
                "summary": "Readiness: whether the server takes new sessions (HTTP-7)",
                "operationId": "ready",
                "responses": {
                    "200": _answer(
                        "Taking sessions.",
                        schema={"type": "object", "required": ["status"], "properties": {"status": {"const": "ready"}}},
                    ),
                    "503": _answer(
                        "Starting, draining or stopping.",
                        schema={"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
                    ),
                },
            }
        },
        "/access": {
            "get": {
                "summary": "Whether a bearer token is required, and what the presented one grants (SEC-TOKEN-2)",
                "operationId": "access",
                "responses": {
                    "200": _answer(
                        "The grant.",
                        schema={
                            "type": "object",
                            "required": ["tokens_required", "role"],
                            "properties": {
                                "tokens_required": {"type": "boolean"},
                                "role": {"enum": ["operator", "agent", None]},
                            },
                        },
                    )
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "The server's metrics, Prometheus text format; operator only (HTTP-8)",
                "operationId": "metrics",
                "responses": {
                    "200": {
                        "description": "Prometheus text exposition.",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        "/metadata": {
            "get": {
                "summary": "The environment's name, description and version (HTTP-2)",
                "operationId": "metadata",
                "responses": {"200": _answer("Metadata.", "MetadataResponse")},
            }
        },
        "/schema": {
            "get": {
                "summary": "The action, observation, reset observation and state schemas (HTTP-3)",
                "operationId": "schema",
                "responses": {
                    "200": _answer(
                        "The environment's JSON Schemas: components Action, Observation, ResetObservation and State.",
                        "SchemaResponse",
                    )
                },
            }
        },
        "/mcp": {
            "post": {
                "summary": (
                    "One JSON-RPC 2.0 request: tools/list, tools/call, openenv/session/create, openenv/session/close"
                    " (MCP-RPC-1)"
                ),
                "operationId": "mcp",
                "requestBody": _body("JsonRpcRequest"),
                "responses": {"200": _answer("The JSON-RPC response (errors too).", "JsonRpcResponse")},
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document (HTTP-9)",
                "operationId": "openapi",
                "responses": {"200": _answer("OpenAPI 3.1 document.")},
            }
        },
    }
    if not production:
        schemas["ResetParameters"] = _spec_part(spec, "frames/reset.json", "properties", "data")
        schemas["ObservationData"] = _spec_part(spec, "frames/observation.json", "properties", "data")
        schemas["StepRequest"] = {
            "type": "object",
            "required": ["action"],
            "properties": {"action": {"$ref": "#/components/schemas/Action"}, **STEP_REQUEST_OPTIONS},
        }
        paths["/reset"] = {
            "post": {
                "summary": "Reset a fresh environment and answer its first observation (HTTP-4)",
                "operationId": "reset",
                "requestBody": {**_body("ResetParameters"), "required": False},
                "responses": {
                    "200": _answer("The observation frame's data.", "ObservationData"),
                    "422": _UNPROCESSABLE,
                },
            }
        }
        paths["/step"] = {
            "post": {
                "summary": "Step a fresh environment once (HTTP-4)",
                "operationId": "step",
                "requestBody": _body("StepRequest"),
                "responses": {
                    "200": _answer("The observation frame's data.", "ObservationData"),
                    "422": _UNPROCESSABLE,
                },
            }
        }
        paths["/state"] = {
            "get": {
                "summary": "The state of a fresh environment (HTTP-5)",
                "operationId": "state",
                "responses": {"200": _answer("The state.", "State")},
            }
        }
    return {
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": _DIALECT,
        "info": {
            "title": title,
            "version": version,
            "description": description,
            "x-openenv-protocol": SPEC_VERSION,
            "x-openenv-mode": "production" if production else "simulation",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
