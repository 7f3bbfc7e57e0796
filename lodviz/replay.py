"""A search on record asked again, on the store as it was just before it.

``Replayer.past_search`` is a search (or browse) of the audit log and the
settings it used; any other event is refused. ``Replayer.replay`` rebuilds
the usage and floors of the moment just before it from the audit log
(``timeline``) and asks the same question again: query, agent, parameters,
"now", exclusions, budget and the store's answer settings are the search's
own (handed down, so the live service's settings stay as they are for
everyone else). ``history.Replay.agrees`` then says whether the answer
rebuilt is the one recorded.

Handed the timeline, the search pipeline, the agent's profile, the
landscape (read at each call, so a caller's own is used), the store's
answer settings and the caller's "now" as a datetime.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from lodviz import audit, history
from lodviz.errors import InvalidInput
from lodviz.ingest.inputs import parse_time
from lodviz.params import AnswerSettings, Params
from lodviz.records import AuditEvent
from lodviz.result import Landscape
from lodviz.search import Pipeline
from lodviz.timeline import Timeline


class Replayer:
    """Past searches of one store, replayed."""

    def __init__(
        self,
        timeline: Timeline,
        pipeline: Pipeline,
        profile: Callable[[str | None], Params],
        landscape: Callable[..., Landscape],
        settings: Callable[[], AnswerSettings],
        now: Callable[[datetime | str | None], datetime],
    ) -> None:
        self._timeline = timeline
        self._pipeline = pipeline
        self._profile = profile
        self._landscape = landscape  # Memory.landscape's arguments
        self._settings = settings
        self._now = now

    def past_search(self, event_id: int) -> tuple[AuditEvent, Params]:
        """A search (or browse) on record and the settings it used; ``InvalidInput`` for any other event."""
        event = self._timeline.event(event_id)
        if event.action not in audit.RETRIEVING:
            raise InvalidInput(f"audit event #{event_id} is a {event.action}, not a search; only searches can be replayed.")
        recorded = event.details.get("params")
        return event, Params.from_dict(recorded) if recorded else self._profile(event.agent_id)

    def replay(self, event_id: int) -> history.Replay:
        """A past search as its agent saw it: the store as it was just before it, the same question again."""
        event, params = self.past_search(event_id)
        d = event.details
        moment = history.Moment(before_event=int(event.id or 0))
        when = parse_time(d.get("now"), "now") or event.at or self._now(None)
        exclude = [t for t in d.get("exclude") or [] if isinstance(t, str)]
        weight = float(d.get("exclude_weight", 1.0))
        live = self._settings()
        settings = AnswerSettings(float(d.get("lexical_weight", live.lexical_weight)), str(d.get("budget_policy", live.budget_policy)))
        query = event.query if event.action == "search" else None
        land = self._landscape(query, agent_id=event.agent_id, params=params, now=when, exclude=exclude,
                               exclude_weight=weight, as_of=moment, settings=settings)
        result = None
        if event.action == "search" and event.query and not d.get("view"):
            result = self._pipeline.run(
                self._timeline.snapshot(moment), event.query.strip(), params, when, event.agent_id, exclude, weight,
                budget_tokens=d.get("budget_tokens"), touch=False, actor=None, record=False, past=True, settings=settings,
            )
        return history.Replay(event, moment, land, result, history.returned_tiers(event))


__all__ = ["Replayer"]
