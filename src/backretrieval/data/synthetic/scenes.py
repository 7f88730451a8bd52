"""SYNTHETIC scenes: the attribute vocabularies, seeded scene sampling and the ground-truth
similarity of two scenes (used by the simulated rater)."""

from __future__ import annotations

import itertools
import random

from ...errors import InputError

OBJECT_KINDS = ("ball", "box", "triangle", "star", "house", "tree", "car", "cat", "flower", "bird")
COLORS = ("red", "blue", "green", "yellow", "orange", "purple", "black", "white")
SIZES = ("small", "large")
POSITIONS = ("left", "center", "right")
BACKGROUNDS = ("meadow", "beach", "room", "night", "snow", "street")

MAX_COUNT = 4
_COUNT_WEIGHTS = (0.4, 0.3, 0.2, 0.1)


def _rng(*parts: object) -> random.Random:
    """A random stream keyed by a string (str seeds are hashed with SHA-512: platform-stable)."""
    return random.Random("|".join(str(p) for p in parts))


def _sample_object(rng: random.Random, exclude_position: str | None = None, max_count: int = MAX_COUNT) -> dict:
    positions = [p for p in POSITIONS if p != exclude_position]
    return {
        "kind": rng.choice(OBJECT_KINDS),
        "color": rng.choice(COLORS),
        "count": rng.choices(range(1, max_count + 1), weights=_COUNT_WEIGHTS[:max_count])[0],
        "size": rng.choice(SIZES),
        "position": rng.choice(positions),
    }


def sample_scene(rng: random.Random) -> dict:
    """Draw one scene: ``{"background": str, "objects": [main group, optional second group]}``.

    Each object group is ``{"kind", "color", "count", "size", "position"}``; the second group
    (present with probability 0.45) is at a different position and has at most 2 objects.
    """
    main = _sample_object(rng)
    objects = [main]
    if rng.random() < 0.45:
        second = _sample_object(rng, exclude_position=main["position"], max_count=2)
        if second["kind"] == main["kind"] and second["color"] == main["color"]:
            second["color"] = COLORS[(COLORS.index(second["color"]) + 1) % len(COLORS)]
        objects.append(second)
    return {"background": rng.choice(BACKGROUNDS), "objects": objects}


_OBJECT_KEYS = ("kind", "color", "count", "size", "position")


def _check_scene(scene: dict, name: str) -> None:
    if not isinstance(scene, dict) or "background" not in scene or "objects" not in scene:
        raise InputError(f"scene {name}: expected a dict with keys 'background' and 'objects'")
    if not isinstance(scene["objects"], list) or not scene["objects"]:
        raise InputError(f"scene {name}: field 'objects' must be a non-empty list")
    for i, obj in enumerate(scene["objects"]):
        missing = [k for k in _OBJECT_KEYS if k not in obj]
        if missing:
            raise InputError(f"scene {name}: objects[{i}] lacks field(s) {missing}")


def _object_similarity(a: dict, b: dict) -> float:
    count_sim = 1.0 - min(abs(int(a["count"]) - int(b["count"])), MAX_COUNT - 1) / (MAX_COUNT - 1)
    return (
        0.5 * (a["kind"] == b["kind"])
        + 0.25 * (a["color"] == b["color"])
        + 0.1 * count_sim
        + 0.1 * (a["size"] == b["size"])
        + 0.05 * (a["position"] == b["position"])
    )


def _group_weights(objects: list[dict]) -> list[float]:
    # The first group is the main subject; later groups are secondary.
    return [1.0 if i == 0 else 0.5 for i in range(len(objects))]


def scene_similarity(a: dict, b: dict) -> float:
    """Similarity of two scenes' content in [0, 1]; 1 exactly when the content is identical.

    ``0.25 * [same background] + 0.75 * objects``, where ``objects`` is the best weighted
    matching between the object groups of both scenes (main group weight 1, others 0.5),
    normalised by the mean total weight; a pair of groups scores
    ``0.5 kind + 0.25 colour + 0.1 count closeness + 0.1 size + 0.05 position``.
    Symmetric; used by the *simulated* rater to judge relevance.
    """
    _check_scene(a, "a")
    _check_scene(b, "b")
    oa, ob = a["objects"], b["objects"]
    wa, wb = _group_weights(oa), _group_weights(ob)
    small, large, ws, wl, swap = (oa, ob, wa, wb, False) if len(oa) <= len(ob) else (ob, oa, wb, wa, True)
    best = 0.0
    for perm in itertools.permutations(range(len(large)), len(small)):
        total = 0.0
        for i, j in enumerate(perm):
            x, y = (small[i], large[j]) if not swap else (large[j], small[i])
            total += 0.5 * (ws[i] + wl[j]) * _object_similarity(x, y)
        best = max(best, total)
    objects = best / (0.5 * (sum(wa) + sum(wb)))
    sim = 0.25 * (a["background"] == b["background"]) + 0.75 * objects
    return float(min(1.0, max(0.0, sim)))
