"""transformers ``AutoModel`` + masked mean pooling: the paper's M-BERT / XLM-R / XLM baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._util.device import resolve_device, torch_threads
from .._util.hashing import folder_signature
from ..errors import ConfigError
from .base import (
    _Base,
    _CanonicalTorch,
    _fill,
    _l2,
    _local_snapshot,
    _pkg_version,
    _positive_int,
    _unavailable,
    canonical_batches,
    hub_offline,
)

HF_ALIASES = {
    "mbert": "bert-base-multilingual-cased",
    "mdistilbert": "distilbert-base-multilingual-cased",
    "xlmr": "xlm-roberta-base",
    "xlm-mlm": "FacebookAI/xlm-mlm-100-1280",
}


class HFMeanPoolEncoder(_CanonicalTorch, _Base):
    """transformers ``AutoModel`` + masked mean pooling of the last (or ``layer``-th) hidden
    layer: the paper's M-BERT / mDistilBERT / XLM-R / XLM baselines. Keys: ``model`` (Hub name,
    alias ``mbert``/``mdistilbert``/``xlmr``/``xlm-mlm``, or local folder), ``layer`` (-1),
    ``max_length`` (256), ``device``, ``normalize`` (false), and the canonical batching keys
    ``batch_size`` (8), ``pad_multiple`` (8), ``threads`` (1) (module doc)."""

    type_name = "hf-mean-pool"
    default_model: str | None = None

    def __init__(self, enc_id: str, spec: dict) -> None:
        super().__init__(enc_id, spec)
        model = spec.get("model", self.default_model)
        if not model:
            raise ConfigError(f"encoder '{enc_id}': type hf-mean-pool needs `model:`")
        self.model_name = HF_ALIASES.get(str(model), str(model))
        self.layer = int(spec.get("layer", -1))
        self.max_length = _positive_int(enc_id, spec, "max_length", 256)
        self._init_canonical(enc_id, spec, 8)
        self.device = spec.get("device", "auto")
        self.normalize = bool(spec.get("normalize", False))
        self._tok: Any = None
        self._model: Any = None
        self._path: Path | None = None

    def _local_path(self) -> Path | None:
        if self._path is None:
            p = Path(self.model_name).expanduser()
            self._path = p.resolve() if p.is_dir() else _local_snapshot(self.model_name)
        return self._path

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            from transformers import AutoModel, AutoTokenizer

            local = self._local_path()
            src = str(local) if local is not None else self.model_name
            if local is None and hub_offline():
                raise _unavailable(self.id, self.model_name)
            try:
                self._tok = AutoTokenizer.from_pretrained(src, local_files_only=local is not None)
                model = AutoModel.from_pretrained(src, local_files_only=local is not None)
            except OSError as exc:
                raise _unavailable(self.id, self.model_name, str(exc).splitlines()[0][:200]) from exc
            self._dev = resolve_device(self.device, f"encoder '{self.id}'")
            self._model = model.eval().to(self._dev)
            if local is None:
                self._path = _local_snapshot(self.model_name)
        return self._tok, self._model

    def _fp_parts(self) -> dict[str, Any]:
        local = self._local_path()
        if local is None:
            self._load()
            local = self._local_path()
        return {
            "type": self.type_name,
            "model": self.model_name,
            "layer": self.layer,
            "max_length": self.max_length,
            "normalize": self.normalize,
            "weights": folder_signature(local) if local else "unresolved",
            "transformers": _pkg_version("transformers"),
            "device": resolve_device(self.device, f"encoder '{self.id}'").split(":")[0],
            **self._canonical_parts(),
        }

    def encode(self, texts: list[str], lang: str | None = None) -> np.ndarray:
        import torch

        tok, model = self._load()
        dim = int(getattr(model.config, "hidden_size", getattr(model.config, "emb_dim", 0)))
        out = np.zeros((len(texts), dim), np.float32)
        if not texts:
            return out
        texts = list(texts)
        lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=self.max_length)["input_ids"]]
        with torch.no_grad(), torch_threads(self.threads):
            for length, idx in canonical_batches(lengths, self.batch_size, self.pad_multiple, self.max_length):
                batch = tok(
                    _fill([texts[i] for i in idx], self.batch_size),
                    padding="max_length",
                    truncation=True,
                    max_length=length,
                    return_tensors="pt",
                )
                batch = {k: v.to(self._dev) for k, v in batch.items()}
                res = model(**batch, output_hidden_states=self.layer != -1)
                hidden = res.last_hidden_state if self.layer == -1 else res.hidden_states[self.layer]
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                out[idx] = pooled[: len(idx)].float().cpu().numpy()
        return _l2(out) if self.normalize else out


class MDistilBertEncoder(HFMeanPoolEncoder):
    """The paper's mDistilBERT (its ref. [24]; Sanh et al. 2019): the multilingual DistilBERT
    ``distilbert-base-multilingual-cased`` with masked mean pooling of the last layer, like
    M-BERT. (The sentence encoder distilled from mUSE is ``distiluse``.)"""

    type_name = "mdistilbert"
    default_model = "distilbert-base-multilingual-cased"
