"""SYNTHETIC captions: the text helpers and the per-text plan of details shared by every
language's writer (:mod:`.captions`)."""

from __future__ import annotations

import random

# --------------------------------------------------------------------------------------------
# text helpers
# --------------------------------------------------------------------------------------------


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def _sent(s: str) -> str:
    s = _cap(" ".join(s.split()))
    return s if s.endswith((".", "!", "?")) else s + "."


class _Plan:
    """Which details one text (title or body) of one language mentions (drawn per language)."""

    def __init__(self, rng: random.Random, scene: dict) -> None:
        self.rng = rng
        self.main = scene["objects"][0]
        self.second = scene["objects"][1] if len(scene["objects"]) > 1 else None
        self.bg = scene["background"]
        # title
        self.t_size = rng.random() < 0.35
        self.t_color = rng.random() < 0.9
        self.t_loc = rng.random() < 0.75
        self.t_pos = rng.random() < 0.12
        self.t_second = self.second is not None and rng.random() < 0.2
        self.t_vague = self.main["count"] >= 3 and rng.random() < 0.15
        # body
        self.b_size = rng.random() < 0.85
        self.b_pos = rng.random() < 0.75
        self.b_vague = self.main["count"] >= 3 and rng.random() < 0.1
        self.b_second = self.second is not None and rng.random() < 0.85
        self.b2_size = rng.random() < 0.5
        self.b2_color = rng.random() < 0.9
        self.b2_pos = rng.random() < 0.5
        self.b_filler = rng.random() < 0.35
        self.bg_first = rng.random() < 0.3
        self.digits = rng.random() < 0.1
