"""Build `_dash-update-component` bodies from the app's own `_dash-dependencies`, as a forger would.

A body names the callback by its ``output`` string; its ``inputs`` and
``state`` carry values positionally; ``changedPropIds`` is the client's word
on what triggered it, which the server must not rely on.
"""

from __future__ import annotations

import json
from typing import Any


def outputs_of(output: str) -> list[dict[str, Any]] | dict[str, Any]:
    """The ``outputs`` field Dash expects for an ``output`` string (one, or a list for several)."""
    parts = output[2:-2].split("...") if output.startswith("..") else [output]
    found = []
    for part in parts:
        name = part.split("@", 1)[0]
        component, prop = name.rsplit(".", 1)
        found.append({"id": json.loads(component) if component.startswith("{") else component, "property": prop})
    return found if output.startswith("..") else found[0]


def concrete(pattern: dict[str, Any], fill: dict[str, Any]) -> dict[str, Any]:
    """A concrete id for a pattern-matching one: each wildcard key takes ``fill``'s value."""
    return {k: (fill.get(k, 1) if isinstance(v, list) else v) for k, v in pattern.items()}


def body(dependency: dict[str, Any], values: dict[str, Any], *, changed: list[str] | None = None,
         pattern_fill: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request for ``dependency`` with ``values`` by "id.property" (missing ones are None)."""

    def item(spec: dict[str, Any]) -> Any:
        component, prop = spec["id"], spec["property"]
        if component.startswith("{"):
            pattern = json.loads(component)
            cid = concrete(pattern, pattern_fill or {})
            return [{"id": cid, "property": prop, "value": values.get(f"{pattern.get('type')}.{prop}", 1)}]
        return {"id": component, "property": prop, "value": values.get(f"{component}.{prop}")}

    try:
        outputs: Any = outputs_of(dependency["output"])
    except ValueError:  # a made-up output string: no outputs a page could name
        outputs = []
    return {
        "output": dependency["output"],
        "outputs": outputs,
        "inputs": [item(spec) for spec in dependency["inputs"]],
        "state": [item(spec) for spec in dependency["state"]],
        "changedPropIds": [] if changed is None else changed,
    }


def find(dependencies: list[dict[str, Any]], trigger: str) -> dict[str, Any]:
    """The server-side callback one of whose inputs is ``trigger`` ("id.property"; a pattern's type for pattern ids)."""
    for dependency in dependencies:
        if dependency.get("clientside_function"):
            continue
        for spec in dependency["inputs"]:
            component = spec["id"]
            name = json.loads(component).get("type") if component.startswith("{") else component
            if f"{name}.{spec['property']}" == trigger:
                return dependency
    raise LookupError(trigger)
