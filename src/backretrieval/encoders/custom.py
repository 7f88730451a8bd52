"""Any user function ``list[str] -> (n, d)`` as an encoder (``type: callable``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ConfigError
from .base import _as_matrix, _Base


class CallableEncoder(_Base):
    """Any function ``list[str] -> array (n, d)`` named by ``target: "module:function"``.

    Keys: ``target`` (required), ``kwargs`` (passed to the function), ``version`` (bump it to
    invalidate cached embeddings), ``pass_lang`` (false: if true, ``lang=`` is passed too),
    ``batch_invariant`` (true: the function computes each row from its own text alone; set
    false if a row can depend on the other texts of the call - e.g. a neural model batching
    them - and the function then gets one text per call, so cached vectors never depend on
    what else was missing from the cache).

    Example::

        # mypkg/embed.py
        import numpy as np
        def bag_of_lengths(texts, dim=4):
            return np.array([[len(t) % (k + 2) for k in range(dim)] for t in texts], float)

        # params.yaml
        encoders:
          lengths: {type: callable, target: "mypkg.embed:bag_of_lengths", kwargs: {dim: 4}}
    """

    type_name = "callable"

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        target = spec.get("target")
        if not isinstance(target, str) or ":" not in target:
            raise ConfigError(f"encoder '{enc_id}': callable needs target: \"module:function\"")
        self.target = target
        self.kwargs = dict(spec.get("kwargs") or {})
        self.pass_lang = bool(spec.get("pass_lang", False))
        self.uses_lang = self.pass_lang
        self.batch_invariant = bool(spec.get("batch_invariant", True))
        self._fn: Callable[..., Any] | None = None

    def _resolve(self) -> Callable[..., Any]:
        if self._fn is None:
            mod_name, fn_name = self.target.split(":", 1)
            try:
                mod = importlib.import_module(mod_name)
                fn = mod
                for part in fn_name.split("."):
                    fn = getattr(fn, part)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"encoder '{self.id}': cannot import target {self.target!r}: {exc}") from exc
            if not callable(fn):
                raise ConfigError(f"encoder '{self.id}': target {self.target!r} is not callable")
            self._fn = fn
        return self._fn

    def _fp_parts(self) -> dict[str, Any]:
        mod = sys.modules.get(self.target.split(":", 1)[0])
        parts = {
            "type": self.type_name,
            "target": self.target,
            "kwargs": self.kwargs,
            "version": self.spec.get("version", getattr(mod, "__version__", "unversioned")),
        }
        if not self.batch_invariant:  # one text per call: other vectors than batched calls
            parts["batching"] = "one-per-call"
        return parts

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        fn = self._resolve()
        kw = dict(self.kwargs)
        if self.pass_lang:
            kw["lang"] = lang
        return _as_matrix(fn(list(texts), **kw), len(texts), self.id)
