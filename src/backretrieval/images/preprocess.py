"""Image loading and preprocessing (pure numpy / Pillow): EXIF orientation, RGB conversion,
resize + centre crop, ImageNet or TF normalisation (see the package docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError

IMAGENET_MEAN = (0.485, 0.456, 0.406)

IMAGENET_STD = (0.229, 0.224, 0.225)


def load_rgb(path: str | Path) -> Any:
    """Open an image as an RGB ``PIL.Image``: EXIF orientation applied, transparency composited
    on white, palette/greyscale/CMYK/16-bit converted. Raises InputError naming the file."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: image file not found")
    try:
        with Image.open(p) as im:
            im.load()
            im = ImageOps.exif_transpose(im)
            return to_rgb(im)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"{p}: not a readable image ({type(exc).__name__}: {exc})") from exc


def to_rgb(im: Any) -> Any:
    """Convert any Pillow mode to RGB; images with alpha are composited on white."""
    from PIL import Image

    if im.mode == "P":
        im = im.convert("RGBA") if "transparency" in im.info else im.convert("RGB")
    if im.mode in ("LA", "La", "PA"):
        im = im.convert("RGBA")
    if im.mode in ("RGBa",):
        im = im.convert("RGBA")
    if im.mode == "RGBA":
        bg = Image.new("RGB", im.size, (255, 255, 255))
        bg.paste(im, mask=im.getchannel("A"))
        return bg
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(im, dtype=np.float64)
        hi = 65535.0 if im.mode.startswith("I;16") else max(float(arr.max()), 1.0)
        im = Image.fromarray(np.clip(arr / hi * 255.0, 0, 255).astype(np.uint8), mode="L")
    if im.mode == "F":
        arr = np.asarray(im, dtype=np.float64)
        im = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), mode="L")
    if im.mode != "RGB":
        im = im.convert("RGB")  # L, 1, CMYK, YCbCr, LAB, HSV
    return im


def preprocess(im: Any, res: int, normalize: str = "imagenet", crop_pct: float = 0.875) -> np.ndarray:
    """RGB PIL image -> float32 CHW array: shorter side to ``round(res/crop_pct)``, centre crop."""
    from PIL import Image

    w, h = im.size
    short = int(round(res / crop_pct))
    scale = short / min(w, h)
    nw, nh = max(res, int(round(w * scale))), max(res, int(round(h * scale)))
    im = im.resize((nw, nh), Image.Resampling.BICUBIC)
    left, top = (nw - res) // 2, (nh - res) // 2
    im = im.crop((left, top, left + res, top + res))
    x = np.asarray(im, dtype=np.float32) / 255.0
    if normalize == "imagenet":
        x = (x - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    elif normalize == "tf":
        x = x * 2.0 - 1.0
    else:
        raise ConfigError(f"normalize must be 'imagenet' or 'tf', got {normalize!r}")
    return np.ascontiguousarray(x.transpose(2, 0, 1))
