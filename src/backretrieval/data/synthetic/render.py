"""SYNTHETIC images: cartoon scenes drawn with Pillow (supersampled, jittered placement,
tints and textures)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image, ImageDraw

from ...errors import InputError
from .scenes import BACKGROUNDS

_RGB = {
    "red": (215, 38, 45),
    "blue": (36, 84, 214),
    "green": (40, 160, 62),
    "yellow": (242, 206, 40),
    "orange": (244, 134, 28),
    "purple": (136, 58, 178),
    "black": (28, 28, 30),
    "white": (246, 246, 246),
}
_SS = 2  # supersampling factor (drawn at 2x, downscaled with LANCZOS for anti-aliasing)

# horizon as a fraction of the height; objects stand between the horizon and the bottom
_HORIZON = {"meadow": 0.55, "beach": 0.52, "room": 0.6, "night": 0.62, "snow": 0.55, "street": 0.58}


def _shade(rgb: Sequence[int], f: float) -> tuple[int, int, int]:
    if f >= 1.0:
        return tuple(int(round(c + (255 - c) * (f - 1.0))) for c in rgb)  # type: ignore[return-value]
    return tuple(int(round(c * f)) for c in rgb)  # type: ignore[return-value]


def _jitter(rgb: Sequence[int], rng: random.Random, amount: int) -> tuple[int, int, int]:
    return tuple(max(0, min(255, c + rng.randint(-amount, amount))) for c in rgb)  # type: ignore[return-value]


def _vgradient(w: int, h: int, top: Sequence[int], bottom: Sequence[int]) -> np.ndarray:
    t = np.linspace(0.0, 1.0, h, dtype=np.float64)[:, None]
    rows = (1 - t) * np.asarray(top, np.float64) + t * np.asarray(bottom, np.float64)
    return np.repeat(np.rint(rows).astype(np.uint8)[:, None, :], w, axis=1)


def _draw_background(bg: str, W: int, rng: random.Random) -> Image.Image:
    hy = int(_HORIZON[bg] * W)
    arr = np.zeros((W, W, 3), np.uint8)
    if bg == "meadow":
        arr[:hy] = _vgradient(W, hy, _jitter((120, 180, 240), rng, 15), _jitter((200, 230, 250), rng, 10))
        arr[hy:] = _vgradient(W, W - hy, _jitter((90, 170, 70), rng, 15), _jitter((50, 120, 40), rng, 12))
    elif bg == "beach":
        sea = hy + int(0.12 * W)
        arr[:hy] = _vgradient(W, hy, _jitter((100, 170, 240), rng, 15), _jitter((190, 225, 250), rng, 10))
        arr[hy:sea] = _vgradient(W, sea - hy, _jitter((30, 110, 190), rng, 12), _jitter((60, 150, 210), rng, 12))
        arr[sea:] = _vgradient(W, W - sea, _jitter((235, 215, 160), rng, 12), _jitter((215, 190, 130), rng, 12))
    elif bg == "room":
        arr[:hy] = _vgradient(W, hy, _jitter((235, 222, 195), rng, 20), _jitter((215, 200, 170), rng, 20))
        arr[hy:] = _vgradient(W, W - hy, _jitter((150, 100, 60), rng, 15), _jitter((120, 78, 45), rng, 15))
    elif bg == "night":
        arr[:hy] = _vgradient(W, hy, _jitter((10, 15, 45), rng, 8), _jitter((35, 45, 95), rng, 10))
        arr[hy:] = _vgradient(W, W - hy, _jitter((25, 45, 35), rng, 8), _jitter((12, 25, 18), rng, 6))
    elif bg == "snow":
        arr[:hy] = _vgradient(W, hy, _jitter((170, 178, 190), rng, 12), _jitter((215, 220, 228), rng, 10))
        arr[hy:] = _vgradient(W, W - hy, _jitter((245, 248, 252), rng, 5), _jitter((220, 228, 240), rng, 8))
    elif bg == "street":
        arr[:hy] = _vgradient(W, hy, _jitter((150, 190, 230), rng, 15), _jitter((210, 225, 240), rng, 10))
        arr[hy:] = _vgradient(W, W - hy, _jitter((95, 95, 100), rng, 10), _jitter((70, 70, 75), rng, 10))
    else:  # pragma: no cover - scenes are validated before drawing
        raise InputError(f"unknown background {bg!r}; expected one of {BACKGROUNDS}")
    img = Image.fromarray(arr, "RGB")
    d = ImageDraw.Draw(img)
    u = W / 100.0
    if bg in ("meadow", "beach"):
        sx, sy, r = rng.uniform(10, 90) * u, rng.uniform(8, 20) * u, rng.uniform(6, 9) * u
        d.ellipse([sx - r, sy - r, sx + r, sy + r], fill=_jitter((255, 225, 80), rng, 10))
        for _ in range(rng.randint(1, 3)):
            cx, cy = rng.uniform(0, 100) * u, rng.uniform(8, 30) * u
            for k in range(3):
                rr = rng.uniform(4, 7) * u
                ox = (k - 1) * rr * 1.1
                d.ellipse([cx + ox - rr, cy - rr * 0.7, cx + ox + rr, cy + rr * 0.7], fill=(250, 250, 252))
    if bg == "meadow":
        for _ in range(60):
            x, y = rng.uniform(0, W), rng.uniform(hy, W)
            d.line(
                [x, y, x + rng.uniform(-1.5, 1.5) * u, y - rng.uniform(2, 4) * u],
                fill=_jitter((30, 110, 30), rng, 20),
                width=max(1, int(0.6 * u)),
            )
    elif bg == "beach":
        sea = hy + int(0.12 * W)
        for _ in range(8):
            x, y = rng.uniform(0, W), rng.uniform(hy + 2 * u, sea - 2 * u)
            d.arc([x, y, x + 8 * u, y + 3 * u], 200, 340, fill=(220, 240, 255), width=max(1, int(0.5 * u)))
        for _ in range(40):
            x, y = rng.uniform(0, W), rng.uniform(sea, W)
            d.point([(x, y)], fill=(190, 160, 110))
    elif bg == "room":
        wx = rng.uniform(15, 65) * u
        d.rectangle(
            [wx, 10 * u, wx + 22 * u, 32 * u],
            fill=_jitter((170, 210, 240), rng, 15),
            outline=(255, 255, 255),
            width=int(1.2 * u),
        )
        d.line([wx + 11 * u, 10 * u, wx + 11 * u, 32 * u], fill=(255, 255, 255), width=int(0.8 * u))
        for k in range(1, 6):
            y = hy + k * (W - hy) / 6
            d.line([0, y, W, y], fill=(100, 65, 38), width=max(1, int(0.5 * u)))
        d.rectangle([0, hy - 1.5 * u, W, hy], fill=(245, 240, 230))
    elif bg == "night":
        mx, my, r = rng.uniform(10, 90) * u, rng.uniform(8, 22) * u, rng.uniform(5, 8) * u
        d.ellipse([mx - r, my - r, mx + r, my + r], fill=(245, 240, 200))
        for _ in range(35):
            x, y = rng.uniform(0, W), rng.uniform(0, hy)
            s = rng.uniform(0.3, 0.7) * u
            d.ellipse([x - s, y - s, x + s, y + s], fill=(255, 255, 230))
    elif bg == "snow":
        d.polygon([(0, hy), (30 * u, hy - 12 * u), (60 * u, hy), (80 * u, hy - 8 * u), (W, hy)], fill=(235, 240, 248))
        for _ in range(45):
            x, y = rng.uniform(0, W), rng.uniform(0, W)
            s = rng.uniform(0.4, 0.9) * u
            d.ellipse([x - s, y - s, x + s, y + s], fill=(255, 255, 255))
    elif bg == "street":
        x = 0.0
        while x < W:
            bw, bh = rng.uniform(12, 24) * u, rng.uniform(12, 35) * u
            d.rectangle([x, hy - bh, x + bw, hy], fill=_jitter((150, 150, 158), rng, 20))
            x += bw + rng.uniform(0, 3) * u
        d.rectangle([0, hy, W, hy + 5 * u], fill=(175, 175, 170))
        ly = hy + (W - hy) * 0.6
        for k in range(0, 100, 16):
            d.rectangle([(k + 2) * u, ly, (k + 10) * u, ly + 1.5 * u], fill=(245, 245, 245))
    return img


def _draw_ball(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    r = s / 2
    d.ellipse([cx - r, by - 2 * r, cx + r, by], fill=col, outline=_shade(col, 0.6), width=max(1, int(s / 30)))
    hr = r * 0.28
    d.ellipse([cx - r * 0.45 - hr, by - r * 1.45 - hr, cx - r * 0.45 + hr, by - r * 1.45 + hr], fill=_shade(col, 1.5))


def _draw_box(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    a = s * 0.78
    o = s * 0.22
    x0, y0 = cx - (a + o) / 2, by - a
    d.polygon([(x0, y0), (x0 + o, y0 - o), (x0 + o + a, y0 - o), (x0 + a, y0)], fill=_shade(col, 1.35))
    d.polygon([(x0 + a, y0), (x0 + o + a, y0 - o), (x0 + o + a, by - o), (x0 + a, by)], fill=_shade(col, 0.7))
    d.rectangle([x0, y0, x0 + a, by], fill=col, outline=_shade(col, 0.55), width=max(1, int(s / 40)))


def _draw_triangle(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    h = s * rng.uniform(0.85, 1.0)
    d.polygon(
        [(cx - s / 2, by), (cx + s / 2, by), (cx + rng.uniform(-0.1, 0.1) * s, by - h)],
        fill=col,
        outline=_shade(col, 0.55),
    )


def _star_points(cx: float, cy: float, r: float, rot: float) -> list[tuple[float, float]]:
    pts = []
    for k in range(10):
        rr = r if k % 2 == 0 else r * 0.42
        ang = rot + k * math.pi / 5 - math.pi / 2
        pts.append((cx + rr * math.cos(ang), cy + rr * math.sin(ang)))
    return pts


def _draw_star(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    d.polygon(_star_points(cx, by - s / 2, s / 2, rng.uniform(-0.3, 0.3)), fill=col, outline=_shade(col, 0.55))


def _draw_house(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    w, h = s * 0.8, s * 0.55
    d.rectangle([cx - w / 2, by - h, cx + w / 2, by], fill=col, outline=_shade(col, 0.55), width=max(1, int(s / 40)))
    d.polygon([(cx - w / 2 - s * 0.08, by - h), (cx + w / 2 + s * 0.08, by - h), (cx, by - s)], fill=_shade(col, 0.6))
    d.rectangle([cx - w * 0.1, by - h * 0.55, cx + w * 0.1, by], fill=(90, 55, 30))
    d.rectangle([cx + w * 0.2, by - h * 0.8, cx + w * 0.38, by - h * 0.5], fill=(200, 230, 250))


def _draw_tree(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    tw = s * 0.14
    d.rectangle([cx - tw / 2, by - s * 0.45, cx + tw / 2, by], fill=(110, 70, 35))
    r = s * 0.33
    for dx, dy in ((-0.5, 0.0), (0.5, 0.0), (0.0, -0.55)):
        x, y = cx + dx * r, by - s * 0.55 + dy * r
        d.ellipse([x - r, y - r, x + r, y + r], fill=col, outline=_shade(col, 0.7))


def _draw_car(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    w = s * 1.1
    wr = s * 0.12
    body_b = by - wr
    d.rounded_rectangle(
        [cx - w / 2, body_b - s * 0.28, cx + w / 2, body_b], radius=s * 0.06, fill=col, outline=_shade(col, 0.55)
    )
    d.polygon(
        [
            (cx - w * 0.3, body_b - s * 0.28),
            (cx - w * 0.18, body_b - s * 0.5),
            (cx + w * 0.18, body_b - s * 0.5),
            (cx + w * 0.3, body_b - s * 0.28),
        ],
        fill=_shade(col, 0.85),
    )
    d.rectangle([cx - w * 0.16, body_b - s * 0.46, cx + w * 0.16, body_b - s * 0.3], fill=(190, 220, 245))
    wheel = (20, 20, 20) if sum(col) > 120 else (90, 90, 90)
    for x in (cx - w * 0.3, cx + w * 0.3):
        d.ellipse([x - wr, by - 2 * wr, x + wr, by], fill=wheel)


def _draw_cat(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    out = _shade(col, 0.55) if sum(col) > 150 else (120, 120, 120)
    d.ellipse([cx - s * 0.32, by - s * 0.55, cx + s * 0.32, by], fill=col, outline=out)
    side = 1 if rng.random() < 0.5 else -1
    hx, hy, hr = cx + side * s * 0.18, by - s * 0.62, s * 0.2
    for ex in (-1, 1):
        d.polygon(
            [
                (hx + ex * hr * 0.9, hy - hr * 0.3),
                (hx + ex * hr * 0.2, hy - hr * 0.8),
                (hx + ex * hr * 0.8, hy - hr * 1.5),
            ],
            fill=col,
            outline=out,
        )
    d.ellipse([hx - hr, hy - hr, hx + hr, hy + hr], fill=col, outline=out)
    eye = (40, 160, 60) if col != _RGB["green"] else (240, 200, 40)
    for ex in (-1, 1):
        d.ellipse([hx + ex * hr * 0.4 - hr * 0.15, hy - hr * 0.3, hx + ex * hr * 0.4 + hr * 0.15, hy], fill=eye)
    tx = cx - side * s * 0.3
    d.line([tx, by - s * 0.2, tx - side * s * 0.18, by - s * 0.6], fill=col, width=max(2, int(s / 12)))


def _draw_flower(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    d.line([cx, by, cx, by - s * 0.6], fill=(40, 130, 40), width=max(2, int(s / 14)))
    d.ellipse([cx, by - s * 0.35, cx + s * 0.22, by - s * 0.25], fill=(50, 150, 50))
    fy, pr = by - s * 0.72, s * 0.14
    for k in range(6):
        ang = k * math.pi / 3 + rng.uniform(0, 0.3)
        px, py = cx + math.cos(ang) * pr * 1.3, fy + math.sin(ang) * pr * 1.3
        d.ellipse([px - pr, py - pr, px + pr, py + pr], fill=col, outline=_shade(col, 0.7))
    centre = (250, 210, 40) if col not in (_RGB["yellow"], _RGB["orange"]) else (150, 80, 20)
    d.ellipse([cx - pr * 0.8, fy - pr * 0.8, cx + pr * 0.8, fy + pr * 0.8], fill=centre)


def _draw_bird(d: ImageDraw.ImageDraw, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
    side = 1 if rng.random() < 0.5 else -1
    cy = by - s * 0.35
    d.ellipse(
        [cx - s * 0.38, cy - s * 0.22, cx + s * 0.38, cy + s * 0.22],
        fill=col,
        outline=_shade(col, 0.55) if sum(col) > 150 else (120, 120, 120),
    )
    hx = cx + side * s * 0.34
    d.ellipse([hx - s * 0.16, cy - s * 0.36, hx + s * 0.16, cy - s * 0.04], fill=col)
    d.polygon(
        [
            (hx + side * s * 0.14, cy - s * 0.24),
            (hx + side * s * 0.32, cy - s * 0.18),
            (hx + side * s * 0.14, cy - s * 0.12),
        ],
        fill=(245, 150, 30),
    )
    d.ellipse(
        [hx + side * s * 0.04 - s * 0.03, cy - s * 0.25, hx + side * s * 0.04 + s * 0.03, cy - s * 0.19],
        fill=(0, 0, 0) if sum(col) > 150 else (255, 255, 255),
    )
    d.polygon(
        [
            (cx - side * s * 0.1, cy - s * 0.05),
            (cx - side * s * 0.3, cy - s * 0.45),
            (cx + side * s * 0.1, cy - s * 0.05),
        ],
        fill=_shade(col, 0.75),
    )


_DRAWERS: dict[str, Callable[..., None]] = {
    "ball": _draw_ball,
    "box": _draw_box,
    "triangle": _draw_triangle,
    "star": _draw_star,
    "house": _draw_house,
    "tree": _draw_tree,
    "car": _draw_car,
    "cat": _draw_cat,
    "flower": _draw_flower,
    "bird": _draw_bird,
}
_FLYING = {"star", "bird"}
_POS_X = {"left": 0.22, "center": 0.5, "right": 0.78}


def _draw_object(
    d: ImageDraw.ImageDraw, kind: str, cx: float, by: float, s: float, col: tuple, rng: random.Random
) -> None:
    _DRAWERS[kind](d, cx, by, s, col, rng)


def _layout(obj: dict, bg: str, W: int, rng: random.Random) -> list[tuple[float, float, float]]:
    """(centre x, bottom y, size) of each object of a group, back row first."""
    base = (0.17 if obj["size"] == "small" else 0.29) * W
    hy = _HORIZON[bg] * W
    n = int(obj["count"])
    rows = [n] if n <= 2 else [n - n // 2, n // 2]  # back row, front row
    out = []
    for r, k in enumerate(rows):
        front = r == len(rows) - 1
        scale = 1.0 if front else 0.85
        for i in range(k):
            s = base * scale * rng.uniform(0.9, 1.1)
            spread = s * 1.05
            cx = _POS_X[obj["position"]] * W + (i - (k - 1) / 2) * spread + rng.uniform(-0.03, 0.03) * W
            cx = min(max(cx, s * 0.55), W - s * 0.55)
            if obj["kind"] in _FLYING:
                by = hy * rng.uniform(0.35, 0.75) + (0.0 if front else -0.12 * W) + s * 0.5
            else:
                depth = 0.8 if front else 0.35
                by = hy + (W - hy) * depth * rng.uniform(0.85, 1.1)
            out.append((cx, min(by, W - 1.0), s))
    return out


def render_scene(scene: dict, image_size: int, rng: random.Random) -> Image.Image:
    """Draw ``scene`` as an RGB image of ``image_size`` x ``image_size`` pixels."""
    W = image_size * _SS
    img = _draw_background(scene["background"], W, rng)
    d = ImageDraw.Draw(img)
    placed = []
    for obj in scene["objects"]:
        col = _jitter(_RGB[obj["color"]], rng, 12)
        for cx, by, s in _layout(obj, scene["background"], W, rng):
            placed.append((by, obj["kind"], cx, s, col))
    for by, kind, cx, s, col in sorted(placed, key=lambda t: t[0]):  # farther (higher) first
        _draw_object(d, kind, cx, by, s, col, rng)
    return img.resize((image_size, image_size), Image.Resampling.LANCZOS)
