"""The embedded default dataset: SYNTHETIC multilingual image-caption scenes, generated offline.

Everything here is *synthetic*: simple cartoon scenes drawn with Pillow (objects of 10 kinds in
8 colours, 1-4 of them, small or large, left/centre/right, on one of 6 backgrounds, optionally a
second group of objects) and template-generated captions in English, German, French, Spanish,
Russian, Arabic and Indonesian. It exists so that the whole pipeline runs offline for tests and demos; it is
NOT a benchmark of real-world quality and numbers computed on it say nothing about real data.

Design choices that make it useful for Backretrieval anyway:

* every language is written independently from the scene with its own random stream: synonyms,
  sentence templates, word order, digits vs. number words, optional details (size, position,
  second object, a filler sentence) and vague quantifiers differ between languages, so the
  translations of one item are *not* word-for-word templates of each other and text encoders of
  different quality score differently;
* images of similar scenes look similar (same background colour scheme, same object shapes and
  colours) but every drawing is jittered (placement, tints, textures, sizes), so image similarity
  is informative but imperfect; about 4 % of items re-stage the scene of an earlier item
  (same attributes, new drawing and new captions), like near-duplicates in real collections;
* the ground-truth scene of every item is exported (``scenes.jsonl``) so that a *simulated*
  rater can judge the relevance of a retrieved item with :func:`scene_similarity`.

Modules: :mod:`.scenes` (vocabularies, scene sampling, :func:`scene_similarity`),
:mod:`.captions` (:func:`describe_scene` over one writer per language, in one module per
language family: ``captions_germanic``, ``captions_romance``, ``captions_slavic``,
``captions_semitic``, ``captions_austronesian``; shared helpers in ``captions_base``), :mod:`.render`
(Pillow drawings, :func:`render_scene`), :mod:`.dataset` (:func:`generate`, :func:`load_scenes`).

Public API: :func:`generate`, :func:`describe_scene`, :func:`scene_similarity`,
:func:`load_scenes`, plus the attribute vocabularies below.

Items are generated one by one from seeds derived from ``(seed, item index)``, so the first
``k`` items of a dataset do not depend on ``n_items``, and the same arguments always give
byte-identical files (for a fixed Pillow/zlib version).
"""

from .captions import SUPPORTED_LANGUAGES, describe_scene
from .dataset import DATASET_NAME, generate, load_scenes
from .render import render_scene
from .scenes import BACKGROUNDS, COLORS, MAX_COUNT, OBJECT_KINDS, POSITIONS, SIZES, sample_scene, scene_similarity

__all__ = [
    "BACKGROUNDS",
    "COLORS",
    "DATASET_NAME",
    "MAX_COUNT",
    "OBJECT_KINDS",
    "POSITIONS",
    "SIZES",
    "SUPPORTED_LANGUAGES",
    "describe_scene",
    "generate",
    "load_scenes",
    "render_scene",
    "sample_scene",
    "scene_similarity",
]
