"""What changed tier between two views of the same memories: up, down, in and out.

Pure numpy: the tiers as a search returns them (``Landscape.returned_tiers``,
OUT outside the query's k candidates) before and after a move of a slider,
between two saved settings or two agents' profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lodviz.scoring import Tier

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The four ways a memory can change, in the order they are listed.
KINDS = ("up", "down", "in", "out")


@dataclass(frozen=True)
class TierChanges:
    """Memories whose returned tier differs between ``before`` and ``after`` (arrays aligned by row)."""

    ids: np.ndarray  # int64, only the memories that changed
    before: np.ndarray  # int8 tiers
    after: np.ndarray  # int8 tiers

    def kind(self) -> np.ndarray:
        """Per changed memory: "in" (was OUT), "out" (is OUT), else "up" or "down"."""
        return np.where(
            self.before == Tier.OUT, "in", np.where(self.after == Tier.OUT, "out", np.where(self.after > self.before, "up", "down"))
        )

    def of(self, kind: str) -> np.ndarray:
        """Ids that changed this way."""
        return self.ids[self.kind() == kind]

    @property
    def counts(self) -> dict[str, int]:
        kinds = self.kind()
        return {k: int((kinds == k).sum()) for k in KINDS}

    def __len__(self) -> int:
        return len(self.ids)

    def frame(self) -> pd.DataFrame:
        """One row per changed memory: id, tier before, tier after, how it changed."""
        import pandas as pd

        return pd.DataFrame(
            {
                "memory_id": self.ids,
                "before": [Tier(int(t)).name for t in self.before],
                "after": [Tier(int(t)).name for t in self.after],
                "change": self.kind(),
            }
        )


def tier_changes(ids: np.ndarray, before: np.ndarray, after: np.ndarray) -> TierChanges:
    """The memories of ``ids`` whose tier differs between ``before`` and ``after``."""
    ids, before, after = np.asarray(ids, dtype=np.int64), np.asarray(before, dtype=np.int8), np.asarray(after, dtype=np.int8)
    if not (len(ids) == len(before) == len(after)):
        raise ValueError("ids, before and after must be the same length")
    changed = before != after
    return TierChanges(ids[changed], before[changed], after[changed])


__all__ = ["KINDS", "TierChanges", "tier_changes"]
