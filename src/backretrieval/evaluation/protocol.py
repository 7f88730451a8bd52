"""The evaluation protocol, one value: N, the seeds, the k of Recall@k, the text field, the image
backbone and CORR's settings. Checked once, when it is made; the library (:func:`.run.evaluate`,
:func:`.run.evaluate_models`), ``backretrieval evaluate`` / ``compare`` / ``rank``, the
sentence-transformers evaluator, the MTEB task and the pipeline's metrics step each build one
:class:`Protocol` and hand it on. Its defaults are those of :mod:`.defaults`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.prepared import TEXT_FIELDS
from ..errors import InputError
from .defaults import DEFAULT_K, DEFAULT_N, DEFAULT_SEEDS, DEFAULT_TEXT_FIELD


def parse_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    """A count ``S`` (seeds 0..S-1) or an explicit list of distinct non-negative seeds."""
    if isinstance(seeds, int) or (hasattr(seeds, "__index__") and not isinstance(seeds, (str, bytes))):
        count = int(seeds)  # type: ignore[arg-type]
        if count < 1:
            raise InputError(f"--n-seeds {count}: need at least 1 seed")
        return tuple(range(count))
    out = tuple(int(s) for s in seeds)
    if not out or min(out) < 0 or len(set(out)) != len(out):
        raise InputError(f"--seeds: {list(out)}; expected distinct non-negative integers")
    return out


#: the keywords of earlier releases, refused with their new names; also the keys of the protocol
#: records they wrote (result JSONs, metrics.json's ``meta``), read as the new ones (:func:`read_record`)
RENAMED = {"n": "sample_size", "k": "recall_k"}


def read_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A protocol record as read, in this version's spelling: the keys of an earlier release
    (``n``, ``k``) renamed to ``sample_size`` and ``recall_k`` in place, so old result JSONs and
    reports still load; a record that has both spellings keeps the new one. Files are written with
    the new spelling only (:meth:`Protocol.record`)."""
    return {RENAMED.get(key, key): v for key, v in record.items() if not (key in RENAMED and RENAMED[key] in record)}


@dataclass(frozen=True)
class Protocol:
    """What an evaluation measures, fixed before any data is read.

    ``sample_size``: queries per seeded sample (N; as many disjoint BkR targets); ``seeds``: a count
    (seeds 0..S-1) or distinct non-negative seeds, kept as a tuple; ``recall_k``: the k of Recall@k
    (1 <= k < N); ``text_field``: ``title``, ``body`` or ``title_body``; ``image_backbone``:
    as ``--image-backbone`` (None: the dataset's default); ``with_corr``: also CORR;
    ``corr_max_pairs``: CORR on a seeded subsample of pairs (None: all N*N).

    Made once per evaluation: the checks run in ``__post_init__`` (InputError naming the flag).
    """

    sample_size: int = DEFAULT_N
    seeds: tuple[int, ...] = tuple(range(DEFAULT_SEEDS))
    recall_k: int = DEFAULT_K
    text_field: str = DEFAULT_TEXT_FIELD
    image_backbone: str | None = None
    with_corr: bool = True
    corr_max_pairs: int | None = None

    def __post_init__(self) -> None:
        n, k = int(self.sample_size), int(self.recall_k)
        if n < 2:
            raise InputError(f"--sample-size {n}: the sample size N must be at least 2")
        if not 1 <= k < n:
            raise InputError(f"--recall-k {k}: Recall@k needs 1 <= k < N (N={n}); with k >= N every query is a hit")
        if self.text_field not in TEXT_FIELDS:
            raise InputError(f"--text-field {self.text_field!r}: expected one of {', '.join(TEXT_FIELDS)}")
        cmp = self.corr_max_pairs
        if cmp is not None and int(cmp) < 1:
            raise InputError(f"--corr-max-pairs {cmp}: expected a positive number of pairs (omit it: all pairs)")
        object.__setattr__(self, "sample_size", n)
        object.__setattr__(self, "recall_k", k)
        object.__setattr__(self, "seeds", parse_seeds(self.seeds))
        object.__setattr__(self, "with_corr", bool(self.with_corr))
        object.__setattr__(self, "corr_max_pairs", None if cmp is None else int(cmp))

    @classmethod
    def of(cls, protocol: Protocol | None = None, /, **fields_: Any) -> Protocol:
        """``protocol`` as given, or one made of the keywords (``sample_size=500, recall_k=10``, ...; the others
        at their defaults); both at once is a TypeError."""
        renamed = [f"{old}= is now {new}=" for old, new in RENAMED.items() if old in fields_]
        if renamed:
            raise TypeError(f"{'; '.join(renamed)} (the names of params.yaml and of the CLI flags)")
        if protocol is None:
            return cls(**fields_)
        if not isinstance(protocol, Protocol):
            raise TypeError(f"protocol: expected a Protocol, got {type(protocol).__name__}")
        if fields_:
            raise TypeError(f"pass a Protocol or its fields ({', '.join(sorted(fields_))}), not both")
        return protocol

    def record(self) -> dict[str, Any]:
        """The protocol as every result records it, its keys spelled as params.yaml and the CLI
        flags spell them (seeds as a list, CORR as ``corr``; the image backbone is recorded,
        resolved, in the result's ``image_backbone`` block). The one record of every door: the
        library's result JSON, the MTEB task, the sentence-transformers evaluator."""
        return {
            "sample_size": self.sample_size,
            "seeds": list(self.seeds),
            "recall_k": self.recall_k,
            "text_field": self.text_field,
            "corr": self.with_corr,
            "corr_max_pairs": self.corr_max_pairs,
        }
