"""Model-free baselines: hashed character n-grams and a seeded random encoder."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import _Base, _l2


class CharNgramEncoder(_Base):
    """Hashed character n-grams (synthetic-free lexical baseline). Keys: ``n`` ([2, 3, 4]),
    ``dim`` (8192), ``weighting`` (``tf`` | ``log-tf``), ``lowercase`` (true). Each text is
    padded with one space at both ends; n-gram ``g`` goes to bucket
    ``int.from_bytes(blake2b(f"{n}:{g}", digest_size=8)) % dim``; rows are L2-normalised."""

    type_name = "char_ngram"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        n = spec.get("n", [2, 3, 4])
        self.ns = sorted({int(v) for v in ([n] if isinstance(n, int) else n)})
        self.dim = int(spec.get("dim", 8192))
        self.weighting = spec.get("weighting", "log-tf")
        self.lowercase = bool(spec.get("lowercase", True))
        if not self.ns or min(self.ns) < 1 or self.dim < 1:
            raise ConfigError(f"encoder '{enc_id}': n must be positive integers and dim >= 1")
        if self.weighting not in ("tf", "log-tf"):
            raise ConfigError(f"encoder '{enc_id}': weighting must be 'tf' or 'log-tf'")
        self._bucket_cache: dict[str, int] = {}

    def _fp_parts(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "n": self.ns,
            "dim": self.dim,
            "weighting": self.weighting,
            "lowercase": self.lowercase,
            "hash": "blake2b-8",
        }

    def _bucket(self, key: str) -> int:
        b = self._bucket_cache.get(key)
        if b is None:
            digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
            b = int.from_bytes(digest, "little") % self.dim
            if len(self._bucket_cache) < 2_000_000:
                self._bucket_cache[key] = b
        return b

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            t = f" {text.lower() if self.lowercase else text} "
            counts: dict[int, int] = {}
            for n in self.ns:
                for j in range(len(t) - n + 1):
                    b = self._bucket(f"{n}:{t[j : j + n]}")
                    counts[b] = counts.get(b, 0) + 1
            if counts:
                idx = np.fromiter(counts.keys(), np.int64, len(counts))
                val = np.fromiter(counts.values(), np.float32, len(counts))
                out[i, idx] = np.log1p(val) if self.weighting == "log-tf" else val
        return _l2(out)


class RandomEncoder(_Base):
    """Seeded random baseline: row = N(0, I) drawn from a generator seeded by
    (``seed``, sha256(text)), L2-normalised. Identical texts map to identical vectors;
    different texts to unrelated ones. Keys: ``dim`` (384), ``seed`` (0)."""

    type_name = "random"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        self.dim = int(spec.get("dim", 384))
        self.seed = int(spec.get("seed", 0))

    def _fp_parts(self) -> dict[str, Any]:
        return {"type": self.type_name, "dim": self.dim, "seed": self.seed, "rng": "pcg64-v1"}

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            words = np.frombuffer(hashlib.sha256(t.encode("utf-8")).digest(), dtype="<u4")
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, *words.tolist()])))
            out[i] = rng.standard_normal(self.dim)
        return _l2(out)
