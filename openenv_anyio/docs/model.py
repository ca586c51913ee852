"""The reference as data: every page's content, read from the spec and nothing else.

:func:`build_reference` reads the entry points' ``if``/``then`` dispatch (the frame types),
walks each frame schema into field rows, reads the code registries (error codes, close codes,
JSON-RPC error codes) and attaches the checked example vectors to the frame they show; the
message flow that opens the reference (:mod:`.flow`) is checked to show every frame type of
the spec. The renderers only lay this out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openenv_anyio.core import ENTRY_POINTS, EXTENSIBLE, Spec, SpecError

from .errors import DocsError
from .examples import Example, load_examples
from .fields import FieldRow, FieldWalker
from .flow import FLOW, Phase, check_flow
from .refs import RefResolver

__all__ = [
    "ERROR_CODES",
    "HTTP_PREFIX",
    "REGISTRIES",
    "EntryPoint",
    "FramePage",
    "Reference",
    "Registry",
    "RegistryEntry",
    "build_reference",
]

ERROR_CODES = "error-codes.json"
#: Schema documents of HTTP answers (``GET /schema``): pages of their own, listed apart from the frames.
HTTP_PREFIX = "http/"
#: The code registries of the spec, in the order the reference shows them: relative path,
#: heading, and the prefix that makes a code's anchor unique on the one-page reference.
REGISTRIES: tuple[tuple[str, str, str], ...] = (
    (ERROR_CODES, "Error codes", ""),
    ("close-codes.json", "Close codes", "close-"),
    ("jsonrpc-error-codes.json", "JSON-RPC error codes", "jsonrpc"),
)
#: Column headings of the registry annotations the reference shows (an entry's ``x-`` members).
_ANNOTATIONS = {"x-sent-by": "Sent by", "x-resumable": "Resumable"}


@dataclass(frozen=True, slots=True)
class FramePage:
    """One schema document with its own page (the frames)."""

    relative: str  # e.g. "frames/reset.json"
    title: str
    description: str
    sent_as: tuple[tuple[str, str], ...]  # (entry point, frame type) pairs that dispatch here
    fields: tuple[FieldRow, ...]
    other_members: bool | None  # additionalProperties at the top: False closed, True open
    examples: tuple[Example, ...]
    extensible: bool = False  # open by the compatibility policy (COMPAT-1): receivers ignore unknown members

    @property
    def is_http(self) -> bool:
        """Whether this schema is an HTTP answer's body rather than a frame."""
        return self.relative.startswith(HTTP_PREFIX)


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """An entry point: what one side may send on one channel, dispatched on ``type``."""

    name: str
    relative: str
    title: str
    description: str
    frame_types: tuple[tuple[str, str], ...]  # (type, relative path of its frame schema)
    unmatched_examples: tuple[Example, ...]  # examples whose type is no frame of this entry


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One code of a registry, its annotations (one per :attr:`Registry.columns`) and the
    example vectors that expect it."""

    code: str
    anchor: str
    meaning: str
    annotations: tuple[str, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Registry:
    """A code registry of the spec (``error-codes.json``, ``close-codes.json``, ...)."""

    relative: str
    heading: str
    title: str
    description: str
    columns: tuple[str, ...]  # headings of the annotations, after Code and Meaning
    entries: tuple[RegistryEntry, ...]

    @property
    def has_examples(self) -> bool:
        return any(entry.examples for entry in self.entries)


@dataclass(frozen=True, slots=True)
class Reference:
    """Everything the generated reference shows."""

    version: str
    entry_points: tuple[EntryPoint, ...]
    frames: tuple[FramePage, ...]
    registries: tuple[Registry, ...]
    flow: tuple[Phase, ...]  # the message flow of a session (checked: shows every frame type)

    def frame_of(self, entry: str, frame_type: str) -> str:
        """The relative path of the schema an entry point dispatches ``frame_type`` to."""
        for point in self.entry_points:
            if point.name == entry:
                return dict(point.frame_types)[frame_type]
        raise KeyError(entry)

    def frame(self, relative: str) -> FramePage:
        """The page of the frame schema at ``relative``."""
        for page in self.frames:
            if page.relative == relative:
                return page
        raise KeyError(relative)

    def title_of(self, relative: str) -> str:
        """The title of a documented schema (a frame or a registry)."""
        for registry in self.registries:
            if registry.relative == relative:
                return registry.title
        return self.frame(relative).title


def build_reference(spec: Spec) -> Reference:
    """Read the whole reference out of ``spec``; raise :class:`DocsError` when it is broken."""
    resolver = RefResolver(spec)
    resolver.check_all()
    dispatch = {name: _frame_types(spec, name, resolver) for name in ENTRY_POINTS}
    # Frames in the order the entry points dispatch to them, then any other frame schema.
    dispatched = [path for types in dispatch.values() for _, path in types]
    check_flow(FLOW, [(name, frame_type) for name, types in dispatch.items() for frame_type, _ in types])
    others = [path for path in spec.relative_paths() if path.startswith(("frames/", HTTP_PREFIX))]
    frame_paths = list(dict.fromkeys([*dispatched, *others]))
    walker = FieldWalker(resolver, frozenset([*frame_paths, *(relative for relative, _, _ in REGISTRIES)]))
    examples = load_examples(spec)
    frames = tuple(_frame_page(spec, path, dispatch, walker, examples) for path in frame_paths)
    entries = tuple(
        EntryPoint(
            name=name,
            relative=relative,
            title=str(spec.document(relative).get("title", name)),
            description=str(spec.document(relative).get("description", "")),
            frame_types=dispatch[name],
            unmatched_examples=tuple(
                e for e in examples if e.entry == name and e.frame_type not in dict(dispatch[name])
            ),
        )
        for name, relative in ENTRY_POINTS.items()
    )
    return Reference(
        version=spec.directory.name,
        entry_points=entries,
        frames=frames,
        registries=tuple(_registry(spec, resolver, examples, *entry) for entry in REGISTRIES),
        flow=FLOW,
    )


def _registry(
    spec: Spec, resolver: RefResolver, examples: list[Example], relative: str, heading: str, prefix: str
) -> Registry:
    """A registry document (``anyOf`` of ``const`` entries with a description) as a table."""
    document = spec.document(relative)
    try:
        raw = [(entry["const"], str(entry["description"]), entry) for entry in document["anyOf"]]
    except (KeyError, TypeError) as exc:
        raise DocsError(f"{resolver.file_of(spec.uri(relative))}: malformed registry ({exc!r})") from None
    keys = [key for key in _ANNOTATIONS if any(key in entry for _, _, entry in raw)]
    return Registry(
        relative=relative,
        heading=heading,
        title=str(document.get("title", heading)),
        description=str(document.get("description", "")),
        columns=tuple(_ANNOTATIONS[key] for key in keys),
        entries=tuple(
            RegistryEntry(
                code=str(code),
                anchor=f"{prefix}{code}",
                meaning=meaning,
                annotations=tuple(_annotation(entry.get(key)) for key in keys),
                examples=tuple(e.name for e in examples if e.expect_code == code),
            )
            for code, meaning, entry in raw
        ),
    )


def _annotation(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _frame_types(spec: Spec, entry: str, resolver: RefResolver) -> tuple[tuple[str, str], ...]:
    """The entry point's dispatch, as (type, relative path of the frame schema) pairs."""
    relative = ENTRY_POINTS[entry]
    uri = spec.uri(relative)
    try:
        raw = spec.frame_schemas(entry)
    except (KeyError, TypeError, SpecError) as exc:
        raise DocsError(f"{resolver.file_of(uri)}: malformed if/then dispatch ({exc!r})") from None
    pairs = []
    for frame_type, ref in raw.items():
        _, target_uri = resolver.resolve(ref, uri, where=("allOf", "then", "$ref"))
        pairs.append((frame_type, resolver.relative(target_uri)))
    return tuple(pairs)


def _frame_page(
    spec: Spec,
    relative: str,
    dispatch: Mapping[str, tuple[tuple[str, str], ...]],
    walker: FieldWalker,
    examples: list[Example],
) -> FramePage:
    document: Mapping[str, Any] = spec.document(relative)
    sent_as = tuple(
        (entry, frame_type) for entry, types in dispatch.items() for frame_type, path in types if path == relative
    )
    extra = document.get("additionalProperties")
    return FramePage(
        relative=relative,
        title=str(document.get("title", relative)),
        description=str(document.get("description", "")),
        sent_as=sent_as,
        fields=tuple(walker.members(document, spec.uri(relative))),
        other_members=extra if isinstance(extra, bool) else None,
        extensible=document.get(EXTENSIBLE) is True,
        examples=tuple(e for e in examples if (e.entry, e.frame_type) in sent_as),
    )
