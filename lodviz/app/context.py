"""What every callback of one app instance shares: the memory and the layout job.

It is created by ``create_app`` and passed to each ``register`` function, so no
module holds user data.
"""

from __future__ import annotations

from dataclasses import dataclass

from lodviz.app.view import DEFAULT_DRAW_LIMIT
from lodviz.mapping import LayoutJob
from lodviz.memory import Memory

#: The actor written into the audit log for what a person does in the app.
APP_ACTOR = "app"


@dataclass
class AppContext:
    mem: Memory
    layout_job: LayoutJob
    draw_limit: int = DEFAULT_DRAW_LIMIT
