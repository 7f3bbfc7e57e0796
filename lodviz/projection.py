"""The landscape's horizontal plane: a 2D projection of the embeddings.

``fit`` runs UMAP (cosine metric) over every embedding and returns the
positions plus the fitted model, pickled, so it can be kept with the store;
``place`` puts new memories into an existing layout with that model's
``transform`` instead of moving everything; ``quick`` is a PCA projection that
takes milliseconds, drawn while UMAP runs in the background.
"""

from __future__ import annotations

import logging
import pickle
import warnings
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("lodviz.projection")

#: Below this many memories UMAP has too few neighbours to be meaningful.
MIN_UMAP_POINTS = 8


@dataclass
class FittedLayout:
    xy: np.ndarray  # (N, 2) float64
    model: bytes | None  # pickled umap.UMAP, None when the quick projection was used
    method: str  # "umap" or "pca"


def quick(vectors: np.ndarray) -> np.ndarray:
    """A PCA projection to 2D, scaled to unit variance: instant, and stable for a given matrix."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) == 0:
        return np.zeros((0, 2))
    if len(vectors) == 1:
        return np.zeros((1, 2))
    centred = vectors - vectors.mean(axis=0)
    # The top two right singular vectors; the sign is fixed so repeated calls agree.
    _, _, vt = np.linalg.svd(centred[: min(len(centred), 20_000)], full_matrices=False)
    basis = vt[:2].T
    basis *= np.sign(basis[np.abs(basis).argmax(axis=0), [0, 1]])
    xy = centred @ basis
    scale = xy.std(axis=0)
    return xy / np.where(scale > 0, scale, 1.0) * 3.0


def fit(vectors: np.ndarray, *, n_neighbors: int = 15, min_dist: float = 0.15, seed: int = 42) -> FittedLayout:
    """UMAP positions for every vector, and the fitted model to place later ones."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(vectors) < MIN_UMAP_POINTS:
        return FittedLayout(quick(vectors), None, "pca")
    import umap

    model = umap.UMAP(
        n_components=2,
        metric="cosine",
        n_neighbors=min(n_neighbors, len(vectors) - 1),
        min_dist=min_dist,
        random_state=seed,
        low_memory=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_jobs/random_state and numba notices
        xy = model.fit_transform(vectors)
    return FittedLayout(np.asarray(xy, dtype=np.float64), pickle.dumps(model), "umap")


def place(model: bytes, vectors: np.ndarray) -> np.ndarray:
    """Positions for new vectors in a fitted layout (UMAP's ``transform``)."""
    if len(vectors) == 0:
        return np.zeros((0, 2))
    fitted = pickle.loads(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fitted.transform(np.asarray(vectors, dtype=np.float32)), dtype=np.float64)
