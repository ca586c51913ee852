"""A served environment as TRL's ``environment_factory``: ``GRPOTrainer(environment_factory=environment_factory(URL))``.

TRL makes one instance per rollout with the zero-argument callable it is given, calls
``reset(**kwargs)`` before each episode (the dataset row's columns as keywords; a string it
returns is added to the prompt) and offers the model every other public method as a tool,
described from the method's type hints and Google-style docstring
(``transformers.utils.get_json_schema``). TRL 1.16 calls ``get_reward()`` on an instance
once per finished rollout when its class has one, as a reward source of its own (then
``reward_funcs`` may be left out); reward functions may read the instances too
(``reward_funcs=lambda environments, **kw: [env.get_reward() for env in environments]``).

:func:`environment_factory` asks the server once what its tools are and builds that class:

- an environment with MCP tools (``tools/list`` answers): one method per tool, its
  parameters and docstring generated from the tool's ``inputSchema`` and description; a call
  is ``tools/call`` on the instance's session;
- any other environment (``tools/list`` answered with an error that means "no tools here":
  ``-32601``, or upstream's server's ``-32603`` for an environment without MCP): one method,
  ``step`` (or ``step_name``), whose parameters are the fields of the action schema
  ``GET /schema`` publishes; a call is a ``step``, and the instance's ``reward``, ``done``
  and ``observation`` follow it.

Where reward comes from (``get_reward()``): a tool named ``reward`` when the environment
lists one (it is called on the instance's session and never offered to the model: the way
for an environment with tools only to score an episode), else the last step's reward, else
0.0 (an episode whose steps gave none, or an environment with tools and no ``reward`` tool).

A listing no class can be made from is refused with a one-line typed error, never guessed
at: :class:`EnvironmentUnavailable` when the answer is not a tool list, and
:class:`UnexpressibleSchema` for a tool whose name or schema no method can carry and for two
tools with the same name.

Each instance holds one session on our client (:class:`~openenv_anyio.client.EnvClient`, in
its blocking mode: resume and exactly-once steps included), opened by its first ``reset``
and reset by the next ones, closed by :func:`close` or when the instance is collected.
A method returns text: a string result as it is, anything else as compact JSON. The only
public attributes of an instance that are not tools are data (``reward``, ``done``,
``observation``, ``tools``), so nothing else reaches the model.
"""

from __future__ import annotations

import json
import keyword
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..client import EnvClient, EnvClientError, RpcMethodNotFound, ToolFailed, http_base_url
from ..core.errors import clip_message
from .tool_signature import ToolSignature, UnexpressibleSchema, tool_signature

__all__ = ["EnvironmentUnavailable", "RewardNotANumber", "UnexpressibleSchema", "close", "environment_factory"]

#: optional action fields upstream's Action models all have, of no use to a model
HIDDEN_ACTION_FIELDS = ("metadata",)
#: the tool :meth:`get_reward` calls when the environment lists it (never offered to the model)
REWARD_TOOL = "reward"
#: what :func:`environment_factory` waits for the server to list its tools or schema
DISCOVERY_TIMEOUT_S = 30.0


class EnvironmentUnavailable(ConnectionError):
    """The server could not be asked what its tools are (one-line message naming the URL)."""


class RewardNotANumber(TypeError):
    """The environment's ``reward`` tool answered something other than a number (one line)."""


def environment_factory(
    url: str,
    *,
    tools: Collection[str] | None = None,
    step_name: str = "step",
    reset_keys: Collection[str] | None = None,
    reset_text: bool = True,
    name: str | None = None,
    token: str | None = None,
    backend: str = "asyncio",
    **client_options: Any,
) -> type[Any]:
    """The class TRL's ``environment_factory`` takes, for the environment served at ``url``.

    ``tools``: the tool names to offer (default: all). ``step_name``: the method's name for a
    non-MCP environment. ``reset_keys``: the ``reset`` keywords sent to the server (default:
    all; a dataset's columns arrive there, so name the ones the environment takes, e.g.
    ``("seed",)``). ``reset_text``: whether ``reset`` returns the first observation as text
    (else None). ``name``: the class name (default: the environment's, from ``/metadata``).
    ``token`` and ``client_options`` go to each instance's :class:`EnvClient`, which runs on
    ``backend`` (``"asyncio"`` or ``"trio"``) on the event-loop thread the process's blocking
    clients share.

    Raises :class:`EnvironmentUnavailable` when the server cannot be reached or answers
    neither tools nor an action schema, :class:`UnexpressibleSchema` when a tool's name or
    schema cannot be a Python method (or two tools share a name), ``ValueError`` for a tool
    name in ``tools`` it does not have.
    """
    if not step_name.isidentifier() or keyword.iskeyword(step_name) or step_name.startswith("_"):
        raise ValueError(f"step_name {step_name!r} cannot be a Python method name")
    options = {**client_options, "token": token}
    listed, metadata, no_tools = _discover(url, options, backend)
    reward_tool = None
    if listed is not None:
        offered = [(tool.name, tool.description, tool.input_schema, _tool_call) for tool in listed]
        _refuse_duplicates(url, [entry[0] for entry in offered])
        if tools is None or REWARD_TOOL not in tools:
            reward_tool = next((entry for entry in offered if entry[0] == REWARD_TOOL), None)
            offered = [entry for entry in offered if entry[0] != REWARD_TOOL]
    else:
        action = _action_schema(url, options)
        offered = [(step_name, _step_description(action), action, _step_call)]
    if tools is not None:
        unknown = sorted(set(tools) - {name for name, *_ in offered})
        if unknown:
            have = ", ".join(sorted(name for name, *_ in offered))
            raise ValueError(f"{url} has no tool {', '.join(map(repr, unknown))} (it has {have})")
        offered = [entry for entry in offered if entry[0] in tools]
    clashes = sorted({name for name, *_ in offered} & _RESERVED)
    if clashes:
        raise UnexpressibleSchema(
            f"tool {clashes[0]!r} would hide the instance's own {clashes[0]!r}: leave it out with tools="
        )
    if reward_tool is not None and tool_signature(*reward_tool[:3]).required:
        raise UnexpressibleSchema(f"tool {REWARD_TOOL!r} takes required arguments: get_reward() cannot call it")
    signatures, calls = [], {}
    for tool_name, description, schema, make_call in offered:  # only the tools offered need a signature
        hidden = HIDDEN_ACTION_FIELDS if make_call is _step_call else ()
        signature = tool_signature(tool_name, description, schema, hidden=hidden)
        signatures.append(signature)
        calls[signature.name] = make_call(signature)
    class_name = name or _class_name(str(metadata.get("name") or "Environment"))
    attributes: dict[str, Any] = {
        "__doc__": _class_doc(url, metadata, [s.name for s in signatures], None if listed is not None else no_tools),
        "__module__": __name__,
        "__init__": _make_init(url, options, backend, reset_keys, reset_text),
        "reset": _reset,
        "get_reward": _get_reward,
        "tools": tuple(signature.name for signature in signatures),
        "_reward_tool": reward_tool is not None,
    }
    for signature in signatures:
        attributes[signature.name] = _method(signature, calls[signature.name])
    return type(class_name, (), attributes)


def close(environment: Any) -> None:
    """End ``environment``'s session now (it ends when the instance is collected otherwise)."""
    finalizer = environment.__dict__.get("_finalizer")
    if finalizer is not None:
        finalizer()


# -- what an instance is ----------------------------------------------------------------

#: an instance's own public names, which no tool may take
_RESERVED = frozenset({"reset", "get_reward", "reward", "done", "observation", "tools"})


def _make_init(
    url: str, options: Mapping[str, Any], backend: str, reset_keys: Collection[str] | None, reset_text: bool
) -> Callable[[Any], None]:
    keys = None if reset_keys is None else frozenset(reset_keys)

    def __init__(self: Any) -> None:
        #: the last step's reward (None before the first, and for tool calls)
        self.reward = None
        #: whether the last step ended the episode
        self.done = False
        #: the last observation (reset or step), as the server sent it
        self.observation = None
        client = EnvClient(url, **options).sync(backend=backend)
        self._client = client
        self._keys = keys
        self._reset_text = reset_text
        self._finalizer = weakref.finalize(self, client.close)

    return __init__


def _reset(self: Any, **kwargs: Any) -> str | None:
    """Start a new episode on this instance's session (opened by the first call).

    Args:
        kwargs: reset parameters; only ``reset_keys`` are sent when they were named.

    Returns:
        The first observation as text (None when the factory was made with ``reset_text=False``).
    """
    sent = kwargs if self._keys is None else {key: value for key, value in kwargs.items() if key in self._keys}
    result = self._client.reset(**sent)
    self.reward, self.done, self.observation = None, bool(result.done), result.observation
    return _text(result.observation) if self._reset_text else None


def _get_reward(self: Any) -> float:
    """The episode's reward so far (TRL calls it once per finished rollout).

    Returns:
        The environment's ``reward`` tool's answer when it lists one, else the last step's
        reward, else 0.0.
    """
    if self._reward_tool:
        answer = self._client.call_tool(REWARD_TOOL)
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            raise RewardNotANumber(f"tool {REWARD_TOOL!r} answered {_one_line(repr(answer))}, not a number")
        return float(answer)
    return float(self.reward or 0.0)


def _method(signature: ToolSignature, call: Callable[[Any, dict[str, Any]], str]) -> Callable[..., str]:
    bind = signature.signature().bind

    def method(self: Any, **kwargs: Any) -> str:
        bound = bind(self, **kwargs)
        bound.apply_defaults()
        given = {key: value for key, value in bound.arguments.items() if key != "self"}
        return call(self, signature.arguments(given))

    method.__name__ = method.__qualname__ = signature.name
    method.__doc__ = signature.docstring()
    method.__signature__ = signature.signature()  # type: ignore[attr-defined]
    method.__annotations__ = signature.annotations()
    return method


def _tool_call(signature: ToolSignature) -> Callable[[Any, dict[str, Any]], str]:
    def call(self: Any, arguments: dict[str, Any]) -> str:
        return _text(self._client.call_tool(signature.name, **arguments))

    return call


def _step_call(signature: ToolSignature) -> Callable[[Any, dict[str, Any]], str]:
    def call(self: Any, action: dict[str, Any]) -> str:
        result = self._client.step(action)
        self.reward, self.done, self.observation = result.reward, bool(result.done), result.observation
        return _text(result.observation)

    return call


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


# -- asking the server ------------------------------------------------------------------


def _discover(url: str, options: Mapping[str, Any], backend: str) -> tuple[list[Any] | None, dict[str, Any], str]:
    """The server's MCP tools (None when it has none), its ``/metadata``, and why it has none."""
    why = "it lists no tools"
    try:
        client = EnvClient(url, **{"connect_timeout_s": 10.0, "message_timeout_s": DISCOVERY_TIMEOUT_S, **options})
        with client.sync(backend=backend) as env:
            try:
                listed = env.list_tools()
            except (RpcMethodNotFound, ToolFailed) as exc:  # "no tools here": ours -32601, upstream's -32603
                listed, why = [], f"tools/list answered {exc.code}: {_one_line(exc.message)}"
    except EnvClientError as exc:
        raise EnvironmentUnavailable(f"cannot list the tools of {url}: {_one_line(exc)}") from exc
    metadata = _http_json(url, "/metadata", options, required=False)
    return (listed or None), metadata if isinstance(metadata, dict) else {}, why


def _action_schema(url: str, options: Mapping[str, Any]) -> dict[str, Any]:
    schemas = _http_json(url, "/schema", options, required=True)
    action = schemas.get("action") if isinstance(schemas, dict) else None
    if not isinstance(action, dict):
        raise EnvironmentUnavailable(f"{url} lists no MCP tools and its /schema has no action schema")
    return action


def _http_json(url: str, path: str, options: Mapping[str, Any], *, required: bool) -> Any:
    import httpx

    token = options.get("token")
    headers = {**(options.get("headers") or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    try:
        answer = httpx.get(
            _http_base(url) + path,
            headers=headers,
            timeout=DISCOVERY_TIMEOUT_S,
            trust_env=bool(options.get("trust_env", True)),
        )
        answer.raise_for_status()
        return answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        if not required:
            return None
        raise EnvironmentUnavailable(f"cannot read {path} of {url}: {_one_line(exc)}") from exc


def _http_base(url: str) -> str:
    """The server's HTTP base URL, by the client's one rule for every entry point."""
    return http_base_url(url)


def _refuse_duplicates(url: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise UnexpressibleSchema(f"{url} lists two tools named {name!r}: refusing to merge them into one method")
        seen.add(name)


def _step_description(action: Mapping[str, Any]) -> str:
    own = action.get("description") or ""
    return f"Take one step in the environment with this action. {own}".strip()


def _class_name(name: str) -> str:
    cleaned = "".join(part[:1].upper() + part[1:] for part in "".join(c if c.isalnum() else " " for c in name).split())
    cleaned = cleaned if cleaned and cleaned.isidentifier() else "Environment"
    return cleaned if cleaned.endswith("Tools") else cleaned + "Tools"


def _class_doc(url: str, metadata: Mapping[str, Any], names: list[str], stepped_because: str | None) -> str:
    what = _one_line(metadata.get("description") or metadata.get("name") or "the environment")
    doc = f"{what} (served at {url}), one session per instance; tools: {', '.join(names) or 'none'}."
    if stepped_because is not None:
        doc += f" Stepped through its action schema: no MCP tools ({stepped_because})."
    return doc


def _one_line(text: object) -> str:
    return clip_message(" ".join(str(text).split()))
