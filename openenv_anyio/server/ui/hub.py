"""The ``/ws/ui`` broadcast: what each session looks like, and who is watching (section 8).

Each session keeps an :class:`EpisodeView` (cheap to update on every step; rendered into a
``state_update`` only when someone watches). Each subscriber holds at most one pending view
per session: publishing overwrites it (latest state wins, ``UI-4``) and sets a flag, so a
slow or stuck subscriber costs the stepping session nothing but a dict store; their number
is capped (``max_ui_subscribers``, ``UI-6``), so that store is a bounded loop.

An update that cannot be encoded (an observation deeper than the encoder goes once wrapped
in a ``state_update``, say) is counted, once per version of the view; the action-log entries
that cannot be encoded are dropped and the update is encoded again, else it is skipped. It
costs only itself, never a subscriber's connection nor later updates (``UI-5``).

Dashboards (``/ws/ui?dashboard=1``, ``UI-7``/``UI-8``) also see a session's status (idle,
stepping, dropped), its rewards and returns, and learn when it ends: their pending item for
a session that ended is a :class:`SessionClosed`, which nothing for that session replaces.

A subscriber with an agent token sees the sessions it may not read redacted (``SEC-UI-1``):
their progress (ids, step and episode counts, status) without observations, actions or
rewards. Each view caches its encoding per audience (dashboard or not, redacted or not).
"""

from __future__ import annotations

import collections
import datetime
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ...core import SessionClosed, SessionOutcome

if TYPE_CHECKING:
    from ..observability import Instruments

__all__ = ["EpisodeView", "UiHub", "UiSubscriber"]

log = logging.getLogger("openenv_anyio.server")

#: Steps' rewards kept per episode, and earlier episodes' returns kept per session (``UI-7``).
REWARDS_KEPT: Final = 1000
RETURNS_KEPT: Final = 100


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat()


class EpisodeView:
    """The dashboard's picture of one session's episode."""

    __slots__ = (
        "session_id",
        "episode_id",
        "step_count",
        "current_observation",
        "action_logs",
        "is_reset",
        "version",
        "_encoded",
        "opened_at",
        "reward",
        "done",
        "episode_count",
        "episode_return",
        "rewards",
        "returns",
        "busy",
        "dropped",
        "brought_back",
    )

    def __init__(self, session_id: str, action_log_size: int) -> None:
        self.session_id = session_id
        self.opened_at = time.time()
        self.reward: Any = None
        self.done = False
        self.episode_count = 0
        self.episode_return = 0.0
        self.rewards: collections.deque[float | None] = collections.deque(maxlen=REWARDS_KEPT)
        self.returns: collections.deque[float] = collections.deque(maxlen=RETURNS_KEPT)
        #: a reset or step is running (``status: stepping``)
        self.busy = False
        #: a resumable session waits for its client to reconnect (``status: dropped``)
        self.dropped = False
        #: how it came back after a server restart (``snapshot``, ``replay``), if it did (``EXT-HAND-2``)
        self.brought_back: str | None = None
        self.episode_id: str | None = None
        self.step_count = 0
        self.current_observation: Mapping[str, Any] | None = None
        self.action_logs: collections.deque[tuple[float, Any, Mapping[str, Any], Any, bool, int]] = collections.deque(
            maxlen=action_log_size
        )
        self.is_reset = False
        self.version = 0
        #: (dashboard, redacted) -> (version, text): one encoding per audience and version
        self._encoded: dict[tuple[bool, bool], tuple[int, str | None]] = {}

    def record_reset(
        self,
        episode_id: str | None,
        step_count: int,
        observation: Mapping[str, Any],
        reward: Any = None,
        done: bool = False,
    ) -> None:
        if self.episode_count:
            self.returns.append(self.episode_return)
        self.episode_count += 1
        self.episode_return = 0.0
        self.rewards.clear()
        self.reward, self.done, self.busy = reward, done, False
        self.episode_id = episode_id
        self.step_count = step_count
        self.current_observation = observation
        self.action_logs.clear()
        self.is_reset = True
        self.version += 1

    def record_step(self, action: Any, observation: Mapping[str, Any], reward: Any, done: bool, *, log: bool) -> None:
        """One step happened; ``log=False`` skips the action log (nobody is watching, so
        the log does not keep observations alive for nothing)."""
        self.step_count += 1
        self.current_observation = observation
        self.reward, self.done, self.busy = reward, done, False
        # the reward as a number for sums and curves: booleans count 0/1, anything else is None
        value = float(reward) if isinstance(reward, (int, float)) else None
        self.rewards.append(value)
        if value is not None:
            self.episode_return += value
        if log:
            self.action_logs.append((time.time(), action, observation, reward, done, self.step_count))
        self.is_reset = False
        self.version += 1

    def set_status(self, *, busy: bool | None = None, dropped: bool | None = None) -> None:
        """A change only dashboards see (``UI-7``); publish with :meth:`UiHub.publish_status`."""
        if busy is not None:
            self.busy = busy
        if dropped is not None:
            self.dropped = dropped
        self.version += 1

    @property
    def status(self) -> str:
        if self.dropped:
            return "dropped"
        return "stepping" if self.busy else "idle"

    def encoded(
        self,
        encode: Callable[[dict[str, Any]], str],
        on_skip: Callable[[], None],
        *,
        dashboard: bool = False,
        redacted: bool = False,
    ) -> str | None:
        """``encode(self.render(...))``, computed once per version (and audience) and shared by
        every subscriber; ``None`` when it cannot be encoded (``on_skip`` is called once for
        that version)."""
        audience = (dashboard, redacted)
        cached = self._encoded.get(audience)
        if cached is None or cached[0] != self.version:
            try:
                text: str | None = encode(self.render(dashboard=dashboard, redacted=redacted))
            except Exception:
                on_skip()
                text = None
                if self._drop_unencodable_logs(encode):  # the fault was in the log: try again
                    try:
                        text = encode(self.render(dashboard=dashboard, redacted=redacted))
                    except Exception as again:
                        exc = again
                if text is None:
                    log.warning("session %s: state_update %d skipped: %s", self.session_id, self.version, exc)
            cached = self._encoded[audience] = (self.version, text)
        return cached[1]

    def _drop_unencodable_logs(self, encode: Callable[[dict[str, Any]], str]) -> bool:
        """Drop the action-log entries that cannot be encoded on their own (they would fail
        every later update until they leave the log); ``True`` when some were dropped."""
        kept = []
        for entry in self.action_logs:
            try:
                encode(self.render(current={}, logs=(entry,)))
            except Exception:
                continue
            kept.append(entry)
        if len(kept) == len(self.action_logs):
            return False
        self.action_logs.clear()
        self.action_logs.extend(kept)
        return True

    def render(
        self,
        *,
        current: Mapping[str, Any] | None = None,
        logs: Iterable[tuple[float, Any, Mapping[str, Any], Any, bool, int]] | None = None,
        dashboard: bool = False,
        redacted: bool = False,
    ) -> dict[str, Any]:
        """The ``episode_state`` of a ``state_update`` frame (``current`` and ``logs`` stand
        in for the view's current observation and action log, to try parts of it; ``UI-7``'s
        members for dashboards). ``redacted``: progress only, no observation, action or
        reward (``SEC-UI-1``)."""
        if redacted:
            return self._render_redacted(dashboard)
        state: dict[str, Any] = {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "current_observation": self.current_observation if current is None else current,
            "action_logs": [
                {
                    "timestamp": _iso(ts),
                    "action": action,
                    "observation": observation,
                    "reward": reward,
                    "done": done,
                    "step_count": count,
                }
                for ts, action, observation, reward, done, count in (self.action_logs if logs is None else logs)
            ],
            "is_reset": self.is_reset,
            "session_id": self.session_id,
        }
        if dashboard:
            state.update(
                status=self.status,
                opened_at=_iso(self.opened_at),
                reward=self.reward,
                done=self.done,
                episode_count=self.episode_count,
                episode_return=self.episode_return,
                rewards=list(self.rewards),
                returns=list(self.returns),
            )
            if self.brought_back is not None:
                state["brought_back"] = self.brought_back
        return state

    def _render_redacted(self, dashboard: bool) -> dict[str, Any]:
        state: dict[str, Any] = {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "current_observation": None,
            "action_logs": [],
            "is_reset": self.is_reset,
            "session_id": self.session_id,
            "redacted": True,
        }
        if dashboard:
            state.update(
                status=self.status, opened_at=_iso(self.opened_at), done=self.done, episode_count=self.episode_count
            )
            if self.brought_back is not None:
                state["brought_back"] = self.brought_back
        return state


#: What a subscriber has pending for one session: its latest view, or the news that it ended.
Pending = EpisodeView | SessionClosed


class UiSubscriber:
    """One ``/ws/ui`` connection: the sessions it watches, the ones whose payloads it may
    read (``readable``; ``None``: every one, ``SEC-UI-1``) and its pending updates."""

    __slots__ = ("session_filter", "dashboard", "readable", "pending", "_wake")

    def __init__(
        self, session_filter: str | None, *, dashboard: bool = False, readable: frozenset[str] | None = None
    ) -> None:
        self.session_filter = session_filter
        self.dashboard = dashboard
        self.readable = readable
        self.pending: dict[str, Pending] = {}
        self._wake = trio.Event()

    def watches(self, session_id: str) -> bool:
        return self.session_filter is None or self.session_filter == session_id

    def reads(self, session_id: str) -> bool:
        """Whether this subscriber sees the session's observations, actions and rewards."""
        return self.readable is None or session_id in self.readable

    def offer(self, item: Pending) -> bool:
        """Keep ``item`` as this session's latest pending update (never blocks); once a
        session's end is pending, nothing replaces it. ``True`` when ``item`` replaced an
        update the subscriber had not taken yet (that one is dropped)."""
        pending = self.pending.get(item.session_id)
        if type(pending) is SessionClosed:
            return False
        self.pending[item.session_id] = item
        self._wake.set()
        return pending is not None

    def forget(self, session_id: str) -> None:
        self.pending.pop(session_id, None)

    async def take(self) -> list[Pending]:
        """Wait until something is pending, then take everything pending."""
        while not self.pending:
            await self._wake.wait()
            self._wake = trio.Event()
        items = list(self.pending.values())
        self.pending.clear()
        return items


class UiHub:
    """Sessions' views and the subscribers watching them."""

    def __init__(self, max_subscribers: int | None = None, instruments: Instruments | None = None) -> None:
        self.views: dict[str, EpisodeView] = {}
        self.subscribers: set[UiSubscriber] = set()
        self.max_subscribers = max_subscribers
        self._instruments = instruments
        #: updates that could not be encoded as they were (UI-5)
        self.unencodable_updates = 0
        #: subscribers that are dashboards (``UI-7``): status changes are offered only to them
        self.dashboards: set[UiSubscriber] = set()

    def update_unencodable(self) -> None:
        self.unencodable_updates += 1

    def stats(self) -> dict[str, int]:
        """Subscribers connected, and updates that could not be encoded as they were."""
        return {"subscribers": len(self.subscribers), "unencodable_updates": self.unencodable_updates}

    def add_session(self, view: EpisodeView) -> None:
        """A session started: later subscribers see it on connect (``UI-2``), dashboards at once."""
        self.views[view.session_id] = view
        self.publish_status(view)

    def remove_session(self, session_id: str, outcome: SessionOutcome) -> None:
        """A session ended with ``outcome`` (``UI-8``)."""
        self.views.pop(session_id, None)
        closed = SessionClosed(session_id, outcome.value)
        for subscriber in self.subscribers:
            if subscriber.dashboard and subscriber.watches(session_id):
                subscriber.offer(closed)
            else:
                subscriber.forget(session_id)

    def publish(self, view: EpisodeView) -> None:
        """A watched session changed: offer it to every subscriber watching it."""
        for subscriber in self.subscribers:
            if subscriber.watches(view.session_id) and subscriber.offer(view) and self._instruments is not None:
                self._instruments.ui_frame_dropped()

    def publish_status(self, view: EpisodeView) -> None:
        """A change only dashboards see (session opened, request started, link dropped)."""
        for subscriber in self.dashboards:
            if subscriber.watches(view.session_id):
                subscriber.offer(view)

    def subscribe(
        self, session_filter: str | None, *, dashboard: bool = False, readable: frozenset[str] | None = None
    ) -> UiSubscriber | None:
        """Register a subscriber, with the current view of every session it watches pending;
        ``None`` when ``max_subscribers`` are connected already (``UI-6``)."""
        if self.max_subscribers is not None and len(self.subscribers) >= self.max_subscribers:
            return None
        subscriber = UiSubscriber(session_filter, dashboard=dashboard, readable=readable)
        for view in self.views.values():
            if subscriber.watches(view.session_id):
                subscriber.offer(view)
        self.subscribers.add(subscriber)
        if dashboard:
            self.dashboards.add(subscriber)
        self._subscribers_changed()
        return subscriber

    def unsubscribe(self, subscriber: UiSubscriber) -> None:
        self.subscribers.discard(subscriber)
        self.dashboards.discard(subscriber)
        self._subscribers_changed()

    def _subscribers_changed(self) -> None:
        if self._instruments is not None:
            self._instruments.ui_subscribers_changed(len(self.subscribers))
