"""The embedded default dataset: SYNTHETIC multilingual image-caption scenes, generated offline.

Everything here is *synthetic*: simple cartoon scenes drawn with Pillow (objects of 10 kinds in
8 colours, 1-4 of them, small or large, left/centre/right, on one of 6 backgrounds, optionally a
second group of objects) and template-generated captions in English, German, French, Spanish,
Russian and Arabic. It exists so that the whole pipeline runs offline for tests and demos; it is
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

Public API: :func:`generate`, :func:`describe_scene`, :func:`scene_similarity`,
:func:`load_scenes`, plus the attribute vocabularies below.

Items are generated one by one from seeds derived from ``(seed, item index)``, so the first
``k`` items of a dataset do not depend on ``n_items``, and the same arguments always give
byte-identical files (for a fixed Pillow/zlib version).
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
from PIL import Image, ImageDraw

from .errors import InputError

__all__ = [
    "BACKGROUNDS",
    "COLORS",
    "DATASET_NAME",
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

DATASET_NAME = "synthetic-scenes"
GENERATOR_VERSION = 1

OBJECT_KINDS = ("ball", "box", "triangle", "star", "house", "tree", "car", "cat", "flower", "bird")
COLORS = ("red", "blue", "green", "yellow", "orange", "purple", "black", "white")
SIZES = ("small", "large")
POSITIONS = ("left", "center", "right")
BACKGROUNDS = ("meadow", "beach", "room", "night", "snow", "street")
SUPPORTED_LANGUAGES = ("en", "de", "fr", "es", "ru", "ar")

MAX_COUNT = 4
_COUNT_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
_RESTAGE_RATE = 0.04
_SPLIT_CUTS = (0.8, 0.9)  # train < 0.8 <= val < 0.9 <= test

DESCRIPTION = (
    "SYNTHETIC generated data for offline testing and demonstration only - NOT a benchmark of "
    "real-world quality. Cartoon scenes (objects of 10 kinds, 8 colours, 1-4 per group, on 6 "
    "backgrounds) drawn with Pillow by backretrieval.synthetic, with template-generated titles "
    "and descriptions written independently per language (paraphrases, synonyms and randomly "
    "omitted details, so translations are not word-for-word parallel). Ground-truth scene "
    "attributes are in scenes.jsonl (for simulated relevance judgements)."
)

# --------------------------------------------------------------------------------------------
# scenes
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# English
# --------------------------------------------------------------------------------------------

_EN_NOUNS = {
    "ball": [("ball", "balls")],
    "box": [("box", "boxes"), ("crate", "crates"), ("cube", "cubes")],
    "triangle": [("triangle", "triangles"), ("pyramid", "pyramids")],
    "star": [("star", "stars")],
    "house": [("house", "houses"), ("cottage", "cottages"), ("hut", "huts")],
    "tree": [("tree", "trees")],
    "car": [("car", "cars"), ("automobile", "automobiles")],
    "cat": [("cat", "cats"), ("kitten", "kittens")],
    "flower": [("flower", "flowers"), ("blossom", "blossoms")],
    "bird": [("bird", "birds"), ("songbird", "songbirds")],
}
_EN_COLORS = {
    "red": ["red"], "blue": ["blue"], "green": ["green"], "yellow": ["yellow"],
    "orange": ["orange"], "purple": ["purple", "violet"], "black": ["black"], "white": ["white"],
}
_EN_SIZES = {"small": ["small", "little", "tiny"], "large": ["large", "big", "huge"]}
_EN_NUM = {2: "two", 3: "three", 4: "four", 5: "five"}
_EN_LOC = {
    "meadow": ["on a meadow", "in a green field", "on the grass"],
    "beach": ["on the beach", "by the sea", "on a sandy beach"],
    "room": ["in a room", "indoors", "in a living room"],
    "night": ["at night", "under the night sky", "in the dark"],
    "snow": ["in the snow", "on a snowy field", "in winter snow"],
    "street": ["on the street", "on a city street", "on the road"],
}
_EN_POS = {
    "left": ["on the left", "at the left side"],
    "center": ["in the middle", "in the centre", "in the center"],
    "right": ["on the right", "at the right side"],
}
_EN_BG = {
    "meadow": ["The scene takes place on a green meadow under a blue sky.",
               "In the background there is green grass and a bright sky.",
               "The ground is covered with grass and the sun is shining."],
    "beach": ["The background is a sandy beach with the blue sea behind it.",
              "It is a sunny day at the beach.",
              "Sand, waves and sky fill the background."],
    "room": ["The scene is indoors, with a plain wall and a wooden floor.",
             "Everything is inside a room with a wooden floor.",
             "It looks like the inside of a quiet room."],
    "night": ["It is night: the sky is dark and the moon is shining.",
              "The background is a dark night sky with small stars.",
              "Only the moon lights up the scene."],
    "snow": ["The ground is covered with white snow.",
             "It is winter and there is snow everywhere.",
             "The background is a snowy field under a grey sky."],
    "street": ["The background is a city street with grey buildings.",
               "In the background runs a road with a dashed white line.",
               "The scene is set on an asphalt road in town."],
}
_EN_FILLER = ["It is a simple, colourful drawing.", "The style is flat and cartoon-like.",
              "The colours are bright and plain."]


def _en_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, bool]:
    sg, pl = rng.choice(_EN_NOUNS[obj["kind"]])
    adjs = [rng.choice(_EN_SIZES[obj["size"]]) if size else "", rng.choice(_EN_COLORS[obj["color"]]) if color else ""]
    rest = _join(*adjs, sg if obj["count"] == 1 else pl)
    if obj["count"] == 1:
        det = "an" if rest[0] in "aeiou" else "a"
    elif vague:
        det = rng.choice(["several", "a few", "some"])
    else:
        det = str(obj["count"]) if digits else _EN_NUM[obj["count"]]
    return f"{det} {rest}", obj["count"] > 1


def _en(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _en_np(p.main, rng, p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_EN_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_EN_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _en_np(p.second, rng, False, True, False, False)
        title = _join(np1, "and", np2, loc)
    else:
        title = rng.choice([_join(np1, pos, loc), _join(np1, pos, loc), _join("Drawing of", np1, pos, loc)])
    title = _cap(title)

    np1, plural = _en_np(p.main, rng, p.b_size, True, p.b_vague, False)
    pos = rng.choice(_EN_POS[p.main["position"]]) if p.b_pos else ""
    be = "are" if plural else "is"
    mains = [
        _join("The picture shows", np1, pos),
        _join("There", be, np1, pos),
        _join(np1, be, "visible", pos or "in the picture"),
        _join("In this drawing we see", np1, pos),
    ]
    if pos:
        mains.append(f"{_cap(pos)}, there {be} {np1}")
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, plural2 = _en_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_EN_POS[p.second["position"]]) if p.b2_pos else ""
        be2 = "are" if plural2 else "is"
        sentences.append(_sent(rng.choice([
            _join("There", be2, "also", np2, pos2),
            _join(np2, be2, "also in the picture", pos2),
            _join("Besides that, we can see", np2, pos2),
        ])))
    bg = _sent(rng.choice(_EN_BG[p.bg]))
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_EN_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# German
# --------------------------------------------------------------------------------------------

_DE_NOUNS = {  # (gender, singular, plural)
    "ball": [("m", "Ball", "Bälle"), ("f", "Kugel", "Kugeln")],
    "box": [("f", "Kiste", "Kisten"), ("f", "Schachtel", "Schachteln"), ("m", "Würfel", "Würfel")],
    "triangle": [("n", "Dreieck", "Dreiecke"), ("f", "Pyramide", "Pyramiden")],
    "star": [("m", "Stern", "Sterne")],
    "house": [("n", "Haus", "Häuser"), ("n", "Häuschen", "Häuschen")],
    "tree": [("m", "Baum", "Bäume")],
    "car": [("n", "Auto", "Autos"), ("m", "Wagen", "Wagen")],
    "cat": [("f", "Katze", "Katzen"), ("n", "Kätzchen", "Kätzchen")],
    "flower": [("f", "Blume", "Blumen"), ("f", "Blüte", "Blüten")],
    "bird": [("m", "Vogel", "Vögel")],
}
_DE_COLORS = {
    "red": ["rot"], "blue": ["blau"], "green": ["grün"], "yellow": ["gelb"],
    "orange": ["orangefarben"], "purple": ["violett", "lilafarben"], "black": ["schwarz"], "white": ["weiß"],
}
_DE_SIZES = {"small": ["klein", "winzig"], "large": ["groß", "riesig"]}
_DE_NUM = {2: "zwei", 3: "drei", 4: "vier", 5: "fünf"}
_DE_ART = {"nom": {"m": "ein", "f": "eine", "n": "ein"}, "acc": {"m": "einen", "f": "eine", "n": "ein"}}
_DE_END = {"nom": {"m": "er", "f": "e", "n": "es"}, "acc": {"m": "en", "f": "e", "n": "es"}}
_DE_LOC = {
    "meadow": ["auf einer Wiese", "im Gras", "auf der grünen Wiese"],
    "beach": ["am Strand", "am Meer", "an einem Sandstrand"],
    "room": ["in einem Zimmer", "drinnen", "im Wohnzimmer"],
    "night": ["bei Nacht", "in der Nacht", "unter dem Nachthimmel"],
    "snow": ["im Schnee", "auf einem verschneiten Feld", "im Winter"],
    "street": ["auf der Straße", "auf einer Stadtstraße", "an einer Straße"],
}
_DE_POS = {
    "left": ["links", "auf der linken Seite", "am linken Rand"],
    "center": ["in der Mitte", "mittig"],
    "right": ["rechts", "auf der rechten Seite", "am rechten Rand"],
}
_DE_BG = {
    "meadow": ["Die Szene spielt auf einer grünen Wiese unter blauem Himmel.",
               "Im Hintergrund sieht man Gras und einen hellen Himmel.",
               "Der Boden ist mit Gras bedeckt, und die Sonne scheint."],
    "beach": ["Im Hintergrund liegt ein Sandstrand mit blauem Meer.",
              "Es ist ein sonniger Tag am Strand.",
              "Sand, Wellen und Himmel bilden den Hintergrund."],
    "room": ["Die Szene spielt in einem Zimmer mit Holzboden.",
             "Alles befindet sich in einem Raum mit heller Wand und Holzboden.",
             "Es sieht aus wie das Innere eines ruhigen Zimmers."],
    "night": ["Es ist Nacht, der Himmel ist dunkel und der Mond scheint.",
              "Der Hintergrund ist ein dunkler Nachthimmel mit kleinen Sternen.",
              "Nur der Mond beleuchtet die Szene."],
    "snow": ["Der Boden ist mit weißem Schnee bedeckt.",
             "Es ist Winter, und überall liegt Schnee.",
             "Der Hintergrund ist ein verschneites Feld unter grauem Himmel."],
    "street": ["Im Hintergrund ist eine Stadtstraße mit grauen Gebäuden.",
               "Hinten verläuft eine Straße mit weißer Mittellinie.",
               "Die Szene spielt auf einer asphaltierten Straße in der Stadt."],
}
_DE_FILLER = ["Es ist eine einfache, bunte Zeichnung.", "Der Stil ist schlicht, wie in einem Kinderbuch.",
              "Die Farben sind kräftig und flächig."]


def _de_np(obj: dict, rng: random.Random, case: str, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, bool]:
    g, sg, pl = rng.choice(_DE_NOUNS[obj["kind"]])
    stems = [rng.choice(_DE_SIZES[obj["size"]]) if size else "", rng.choice(_DE_COLORS[obj["color"]]) if color else ""]
    stems = [s for s in stems if s]
    if obj["count"] == 1:
        end = _DE_END[case][g]
        return _join(_DE_ART[case][g], *(s + end for s in stems), sg), False
    det = rng.choice(["mehrere", "einige"]) if vague else (str(obj["count"]) if digits else _DE_NUM[obj["count"]])
    return _join(det, *(s + "e" for s in stems), pl), True


def _de(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _de_np(p.main, rng, "nom", p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_DE_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_DE_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _de_np(p.second, rng, "nom", False, True, False, False)
        title = _join(np1, "und", np2, loc)
    else:
        title = _join(np1, pos, loc)
    title = _cap(title)

    pos = rng.choice(_DE_POS[p.main["position"]]) if p.b_pos else ""
    t = rng.randrange(5)
    if t in (0, 1, 4):
        np1, plural = _de_np(p.main, rng, "acc", p.b_size, True, p.b_vague, False)
        main = [_join("Das Bild zeigt", np1, pos), _join("Man sieht", pos, np1),
                "", "", _join("Auf der Zeichnung erkennt man", pos, np1)][t]
    else:
        np1, plural = _de_np(p.main, rng, "nom", p.b_size, True, p.b_vague, False)
        verb = "sind" if plural else "ist"
        main = _join(pos or "Auf dem Bild", verb, np1, "zu sehen") if t == 2 else _join("Zu sehen", verb, np1, pos)
    sentences = [_sent(main)]
    if p.b_second:
        pos2 = rng.choice(_DE_POS[p.second["position"]]) if p.b2_pos else ""
        t2 = rng.randrange(3)
        if t2 == 1:
            np2, plural2 = _de_np(p.second, rng, "nom", p.b2_size, p.b2_color, False, False)
            s2 = _join("Daneben", "befinden" if plural2 else "befindet", "sich", np2)
        else:
            np2, _ = _de_np(p.second, rng, "acc", p.b2_size, p.b2_color, False, False)
            s2 = _join("Außerdem gibt es", np2, pos2) if t2 == 0 else _join("Man erkennt auch", pos2, np2)
        sentences.append(_sent(s2))
    bg = rng.choice(_DE_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_DE_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# French
# --------------------------------------------------------------------------------------------

_FR_NOUNS = {  # (gender, singular, plural)
    "ball": [("m", "ballon", "ballons"), ("f", "balle", "balles")],
    "box": [("f", "boîte", "boîtes"), ("f", "caisse", "caisses"), ("m", "cube", "cubes")],
    "triangle": [("m", "triangle", "triangles"), ("f", "pyramide", "pyramides")],
    "star": [("f", "étoile", "étoiles")],
    "house": [("f", "maison", "maisons"), ("f", "maisonnette", "maisonnettes")],
    "tree": [("m", "arbre", "arbres")],
    "car": [("f", "voiture", "voitures"), ("f", "auto", "autos")],
    "cat": [("m", "chat", "chats"), ("m", "chaton", "chatons")],
    "flower": [("f", "fleur", "fleurs")],
    "bird": [("m", "oiseau", "oiseaux")],
}
# forms: (masc sg, fem sg, masc pl, fem pl)
_FR_COLORS = {
    "red": [("rouge", "rouge", "rouges", "rouges")],
    "blue": [("bleu", "bleue", "bleus", "bleues")],
    "green": [("vert", "verte", "verts", "vertes")],
    "yellow": [("jaune", "jaune", "jaunes", "jaunes")],
    "orange": [("orange", "orange", "orange", "orange")],
    "purple": [("violet", "violette", "violets", "violettes")],
    "black": [("noir", "noire", "noirs", "noires")],
    "white": [("blanc", "blanche", "blancs", "blanches")],
}
_FR_SIZES = {  # placed before the noun
    "small": [("petit", "petite", "petits", "petites")],
    "large": [("grand", "grande", "grands", "grandes"), ("gros", "grosse", "gros", "grosses")],
}
_FR_NUM = {2: "deux", 3: "trois", 4: "quatre", 5: "cinq"}
_FR_LOC = {
    "meadow": ["dans un pré", "sur l'herbe", "dans une prairie verte"],
    "beach": ["sur la plage", "au bord de la mer"],
    "room": ["dans une pièce", "à l'intérieur", "dans un salon"],
    "night": ["la nuit", "sous le ciel nocturne", "dans la nuit"],
    "snow": ["dans la neige", "sur un champ enneigé", "en hiver"],
    "street": ["dans la rue", "sur une route", "dans une rue de la ville"],
}
_FR_POS = {
    "left": ["à gauche", "sur la gauche"],
    "center": ["au centre", "au milieu"],
    "right": ["à droite", "sur la droite"],
}
_FR_BG = {
    "meadow": ["La scène se passe dans une prairie verte sous un ciel bleu.",
               "À l'arrière-plan, on voit de l'herbe et un ciel clair.",
               "Le sol est couvert d'herbe et le soleil brille."],
    "beach": ["L'arrière-plan montre une plage de sable et la mer bleue.",
              "C'est une journée ensoleillée à la plage.",
              "Le sable, les vagues et le ciel forment le décor."],
    "room": ["La scène se passe à l'intérieur, dans une pièce au plancher en bois.",
             "Tout se trouve dans une pièce avec un mur clair et un parquet.",
             "On dirait l'intérieur d'une pièce calme."],
    "night": ["C'est la nuit : le ciel est sombre et la lune brille.",
              "Le fond est un ciel nocturne avec de petites étoiles.",
              "Seule la lune éclaire la scène."],
    "snow": ["Le sol est couvert de neige blanche.",
             "C'est l'hiver et il y a de la neige partout.",
             "Le fond est un champ enneigé sous un ciel gris."],
    "street": ["À l'arrière-plan, on voit une rue avec des immeubles gris.",
               "Une route avec une ligne blanche traverse le décor.",
               "La scène se passe sur une route goudronnée en ville."],
}
_FR_FILLER = ["C'est un dessin simple et coloré.", "Le style est épuré, comme dans un livre pour enfants.",
              "Les couleurs sont vives et unies."]


def _fr_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, bool]:
    g, sg, pl = rng.choice(_FR_NOUNS[obj["kind"]])
    plural = obj["count"] > 1
    idx = (2 if plural else 0) + (1 if g == "f" else 0)
    pre = rng.choice(_FR_SIZES[obj["size"]])[idx] if size else ""
    post = rng.choice(_FR_COLORS[obj["color"]])[idx] if color else ""
    if not plural:
        det = "une" if g == "f" else "un"
    elif vague:
        det = "plusieurs"
    else:
        det = str(obj["count"]) if digits else _FR_NUM[obj["count"]]
    return _join(det, pre, pl if plural else sg, post), plural


def _fr(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _fr_np(p.main, rng, p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_FR_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_FR_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _fr_np(p.second, rng, False, True, False, False)
        title = _join(np1, "et", np2, loc)
    else:
        title = _join(np1, pos, loc)
    title = _cap(title)

    np1, plural = _fr_np(p.main, rng, p.b_size, True, p.b_vague, False)
    pos = rng.choice(_FR_POS[p.main["position"]]) if p.b_pos else ""
    mains = [_join("L'image montre", np1, pos), _join("On voit", np1, pos), _join("Il y a", np1, pos)]
    if pos:
        mains += [f"{_cap(pos)}, on aperçoit {np1}",
                  _join(np1, "se trouvent" if plural else "se trouve", pos)]
    else:
        mains.append(_join(np1, "occupent" if plural else "occupe", "la scène"))
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, plural2 = _fr_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_FR_POS[p.second["position"]]) if p.b2_pos else ""
        sentences.append(_sent(rng.choice([
            _join("Il y a aussi", np2, pos2),
            _join("On remarque également", np2, pos2),
            _join(np2, "complètent" if plural2 else "complète", "la scène"),
        ])))
    bg = rng.choice(_FR_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_FR_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# Spanish
# --------------------------------------------------------------------------------------------

_ES_NOUNS = {  # (gender, singular, plural)
    "ball": [("f", "pelota", "pelotas"), ("m", "balón", "balones")],
    "box": [("f", "caja", "cajas"), ("m", "cubo", "cubos")],
    "triangle": [("m", "triángulo", "triángulos"), ("f", "pirámide", "pirámides")],
    "star": [("f", "estrella", "estrellas")],
    "house": [("f", "casa", "casas"), ("f", "casita", "casitas")],
    "tree": [("m", "árbol", "árboles")],
    "car": [("m", "coche", "coches"), ("m", "auto", "autos"), ("m", "automóvil", "automóviles")],
    "cat": [("m", "gato", "gatos"), ("m", "gatito", "gatitos")],
    "flower": [("f", "flor", "flores")],
    "bird": [("m", "pájaro", "pájaros"), ("m", "pajarito", "pajaritos")],
}
_ES_COLORS = {  # (masc sg, fem sg, masc pl, fem pl)
    "red": [("rojo", "roja", "rojos", "rojas")],
    "blue": [("azul", "azul", "azules", "azules")],
    "green": [("verde", "verde", "verdes", "verdes")],
    "yellow": [("amarillo", "amarilla", "amarillos", "amarillas")],
    "orange": [("naranja", "naranja", "naranjas", "naranjas"), ("anaranjado", "anaranjada", "anaranjados", "anaranjadas")],
    "purple": [("morado", "morada", "morados", "moradas"), ("violeta", "violeta", "violetas", "violetas")],
    "black": [("negro", "negra", "negros", "negras")],
    "white": [("blanco", "blanca", "blancos", "blancas")],
}
_ES_SIZES_POST = {
    "small": [("pequeño", "pequeña", "pequeños", "pequeñas")],
    "large": [("grande", "grande", "grandes", "grandes")],
}
_ES_SIZES_PRE = {
    "small": [("pequeño", "pequeña", "pequeños", "pequeñas")],
    "large": [("gran", "gran", "grandes", "grandes")],
}
_ES_NUM = {2: "dos", 3: "tres", 4: "cuatro", 5: "cinco"}
_ES_LOC = {
    "meadow": ["en un prado", "sobre la hierba", "en un campo verde"],
    "beach": ["en la playa", "junto al mar"],
    "room": ["en una habitación", "en el interior", "en un salón"],
    "night": ["de noche", "bajo el cielo nocturno", "en la noche"],
    "snow": ["en la nieve", "en un campo nevado"],
    "street": ["en la calle", "en una carretera", "en una calle de la ciudad"],
}
_ES_POS = {
    "left": ["a la izquierda", "en el lado izquierdo"],
    "center": ["en el centro", "en el medio"],
    "right": ["a la derecha", "en el lado derecho"],
}
_ES_BG = {
    "meadow": ["La escena transcurre en un prado verde bajo un cielo azul.",
               "Al fondo se ven hierba y un cielo claro.",
               "El suelo está cubierto de hierba y brilla el sol."],
    "beach": ["Al fondo hay una playa de arena y el mar azul.",
              "Es un día soleado en la playa.",
              "La arena, las olas y el cielo forman el fondo."],
    "room": ["La escena ocurre en una habitación con suelo de madera.",
             "Todo está dentro de una sala con una pared clara y suelo de madera.",
             "Parece el interior de una habitación tranquila."],
    "night": ["Es de noche: el cielo está oscuro y brilla la luna.",
              "El fondo es un cielo nocturno con pequeñas estrellas.",
              "Solo la luna ilumina la escena."],
    "snow": ["El suelo está cubierto de nieve blanca.",
             "Es invierno y hay nieve por todas partes.",
             "El fondo es un campo nevado bajo un cielo gris."],
    "street": ["Al fondo se ve una calle con edificios grises.",
               "Una carretera con una línea blanca cruza el fondo.",
               "La escena ocurre en una calle asfaltada de la ciudad."],
}
_ES_FILLER = ["Es un dibujo sencillo y colorido.", "El estilo es plano, como en un libro infantil.",
              "Los colores son vivos y uniformes."]


def _es_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, bool]:
    g, sg, pl = rng.choice(_ES_NOUNS[obj["kind"]])
    plural = obj["count"] > 1
    idx = (2 if plural else 0) + (1 if g == "f" else 0)
    pre = post_size = ""
    if size:
        if rng.random() < 0.5:
            pre = rng.choice(_ES_SIZES_PRE[obj["size"]])[idx]
        else:
            post_size = rng.choice(_ES_SIZES_POST[obj["size"]])[idx]
    col = rng.choice(_ES_COLORS[obj["color"]])[idx] if color else ""
    if not plural:
        det = "una" if g == "f" else "un"
    elif vague:
        det = "varias" if g == "f" else "varios"
    else:
        det = str(obj["count"]) if digits else _ES_NUM[obj["count"]]
    return _join(det, pre, pl if plural else sg, col, post_size), plural


def _es(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _es_np(p.main, rng, p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_ES_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_ES_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _es_np(p.second, rng, False, True, False, False)
        title = _join(np1, "y", np2, loc)
    else:
        title = _join(np1, pos, loc)
    title = _cap(title)

    np1, plural = _es_np(p.main, rng, p.b_size, True, p.b_vague, False)
    pos = rng.choice(_ES_POS[p.main["position"]]) if p.b_pos else ""
    n = "n" if plural else ""
    mains = [_join("La imagen muestra", np1, pos), _join(f"Se ve{n}", np1, pos), _join("Hay", np1, pos),
             _join(f"En el dibujo aparece{n}", np1, pos)]
    if pos:
        mains.append(_join(pos, "hay", np1))
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, plural2 = _es_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_ES_POS[p.second["position"]]) if p.b2_pos else ""
        n2 = "n" if plural2 else ""
        sentences.append(_sent(rng.choice([
            _join("También hay", np2, pos2),
            _join(f"Además, se ve{n2}", np2, pos2),
            _join(np2, f"completa{n2}", "la escena"),
        ])))
    bg = rng.choice(_ES_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_ES_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# Russian
# --------------------------------------------------------------------------------------------

_RU_NOUNS = {  # (gender, nom sg, gen sg, nom pl, gen pl)
    "ball": [("m", "мяч", "мяча", "мячи", "мячей"), ("m", "шар", "шара", "шары", "шаров"),
             ("m", "мячик", "мячика", "мячики", "мячиков")],
    "box": [("f", "коробка", "коробки", "коробки", "коробок"), ("m", "ящик", "ящика", "ящики", "ящиков"),
            ("m", "кубик", "кубика", "кубики", "кубиков")],
    "triangle": [("m", "треугольник", "треугольника", "треугольники", "треугольников"),
                 ("f", "пирамида", "пирамиды", "пирамиды", "пирамид")],
    "star": [("f", "звезда", "звезды", "звёзды", "звёзд"), ("f", "звёздочка", "звёздочки", "звёздочки", "звёздочек")],
    "house": [("m", "дом", "дома", "дома", "домов"), ("m", "домик", "домика", "домики", "домиков")],
    "tree": [("n", "дерево", "дерева", "деревья", "деревьев")],
    "car": [("f", "машина", "машины", "машины", "машин"),
            ("m", "автомобиль", "автомобиля", "автомобили", "автомобилей")],
    "cat": [("f", "кошка", "кошки", "кошки", "кошек"), ("m", "кот", "кота", "коты", "котов"),
            ("m", "котёнок", "котёнка", "котята", "котят")],
    "flower": [("m", "цветок", "цветка", "цветы", "цветов")],
    "bird": [("f", "птица", "птицы", "птицы", "птиц"), ("f", "птичка", "птички", "птички", "птичек")],
}
_RU_ADJ = {  # (m, f, n, nom pl, gen pl)
    "red": [("красный", "красная", "красное", "красные", "красных")],
    "blue": [("синий", "синяя", "синее", "синие", "синих")],
    "green": [("зелёный", "зелёная", "зелёное", "зелёные", "зелёных")],
    "yellow": [("жёлтый", "жёлтая", "жёлтое", "жёлтые", "жёлтых")],
    "orange": [("оранжевый", "оранжевая", "оранжевое", "оранжевые", "оранжевых")],
    "purple": [("фиолетовый", "фиолетовая", "фиолетовое", "фиолетовые", "фиолетовых")],
    "black": [("чёрный", "чёрная", "чёрное", "чёрные", "чёрных")],
    "white": [("белый", "белая", "белое", "белые", "белых")],
    "small": [("маленький", "маленькая", "маленькое", "маленькие", "маленьких"),
              ("небольшой", "небольшая", "небольшое", "небольшие", "небольших")],
    "large": [("большой", "большая", "большое", "большие", "больших"),
              ("крупный", "крупная", "крупное", "крупные", "крупных")],
}
_RU_GIDX = {"m": 0, "f": 1, "n": 2}
_RU_ONE = {"m": "один", "f": "одна", "n": "одно"}
_RU_NUM = {3: "три", 4: "четыре", 5: "пять"}
_RU_SHOWN = {"m": "изображён", "f": "изображена", "n": "изображено", "pl": "изображены"}
_RU_LOC = {
    "meadow": ["на лугу", "на траве", "на зелёной поляне"],
    "beach": ["на пляже", "у моря", "на берегу моря"],
    "room": ["в комнате", "в помещении", "в гостиной"],
    "night": ["ночью", "под ночным небом", "в темноте"],
    "snow": ["на снегу", "в снегу", "на заснеженном поле"],
    "street": ["на улице", "на дороге", "на городской улице"],
}
_RU_POS = {
    "left": ["слева", "в левой части"],
    "center": ["в центре", "посередине"],
    "right": ["справа", "в правой части"],
}
_RU_BG = {
    "meadow": ["Действие происходит на зелёном лугу под голубым небом.",
               "На заднем плане трава и светлое небо.",
               "Земля покрыта травой, светит солнце."],
    "beach": ["На заднем плане песчаный пляж и синее море.",
              "Солнечный день на пляже.",
              "Фон — песок, волны и небо."],
    "room": ["Действие происходит в комнате с деревянным полом.",
             "Всё находится в помещении со светлой стеной и деревянным полом.",
             "Похоже на интерьер тихой комнаты."],
    "night": ["Сейчас ночь: небо тёмное, светит луна.",
              "Фон — тёмное ночное небо с маленькими звёздами.",
              "Сцену освещает только луна."],
    "snow": ["Земля покрыта белым снегом.",
             "Зима, повсюду лежит снег.",
             "Фон — заснеженное поле под серым небом."],
    "street": ["На заднем плане городская улица с серыми зданиями.",
               "Сзади проходит дорога с белой разметкой.",
               "Действие происходит на асфальтовой дороге в городе."],
}
_RU_FILLER = ["Это простой цветной рисунок.", "Стиль простой, как в детской книжке.", "Цвета яркие и ровные."]


def _ru_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, str]:
    """Nominative noun phrase and its agreement class ("m"/"f"/"n" singular, "pl", "n" for vague)."""
    g, nom_sg, gen_sg, _nom_pl, gen_pl = rng.choice(_RU_NOUNS[obj["kind"]])
    adjs = [rng.choice(_RU_ADJ[obj["size"]]) if size else None, rng.choice(_RU_ADJ[obj["color"]]) if color else None]
    adjs = [a for a in adjs if a]
    c = obj["count"]
    if c == 1:
        one = _RU_ONE[g] if rng.random() < 0.25 else ""
        return _join(one, *(a[_RU_GIDX[g]] for a in adjs), nom_sg), g
    if vague:
        return _join("несколько", *(a[4] for a in adjs), gen_pl), "n"
    if c <= 4:
        num = str(c) if digits else ({"m": "два", "n": "два", "f": "две"}[g] if c == 2 else _RU_NUM[c])
        # 2-4: masc/neut adjectives in genitive plural, feminine usually nominative plural
        return _join(num, *(a[3] if g == "f" else a[4] for a in adjs), gen_sg), "pl"
    return _join(str(c) if digits else _RU_NUM[c], *(a[4] for a in adjs), gen_pl), "pl"


def _ru(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _ru_np(p.main, rng, p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_RU_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_RU_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _ru_np(p.second, rng, False, True, False, False)
        title = _join(np1, "и", np2, loc)
    else:
        title = _join(np1, pos, loc)
    title = _cap(title)

    np1, agr = _ru_np(p.main, rng, p.b_size, True, p.b_vague, False)
    pos = rng.choice(_RU_POS[p.main["position"]]) if p.b_pos else ""
    located = "находятся" if agr == "pl" else "находится"
    mains = [
        _join(pos or "на картинке", _RU_SHOWN[agr], np1),
        f"{_cap(pos or 'на рисунке')} — {np1}",
        _join(pos or "на рисунке", located, np1),
        _join("здесь есть", np1, pos),
    ]
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, agr2 = _ru_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_RU_POS[p.second["position"]]) if p.b2_pos else ""
        sentences.append(_sent(rng.choice([
            _join("ещё на картинке есть", np2, pos2),
            f"рядом — {np2}",
            _join("кроме того,", pos2 or "здесь", _RU_SHOWN[agr2], np2),
        ])))
    bg = rng.choice(_RU_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_RU_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# Arabic
# --------------------------------------------------------------------------------------------

_AR_NOUNS = {  # (gender, singular, dual nominative, plural)
    "ball": [("f", "كرة", "كرتان", "كرات")],
    "box": [("m", "صندوق", "صندوقان", "صناديق"), ("f", "علبة", "علبتان", "علب"), ("m", "مكعب", "مكعبان", "مكعبات")],
    "triangle": [("m", "مثلث", "مثلثان", "مثلثات"), ("m", "هرم", "هرمان", "أهرام")],
    "star": [("f", "نجمة", "نجمتان", "نجمات"), ("m", "نجم", "نجمان", "نجوم")],
    "house": [("m", "بيت", "بيتان", "بيوت"), ("m", "منزل", "منزلان", "منازل")],
    "tree": [("f", "شجرة", "شجرتان", "أشجار")],
    "car": [("f", "سيارة", "سيارتان", "سيارات")],
    "cat": [("f", "قطة", "قطتان", "قطط"), ("m", "قط", "قطان", "قطط")],
    "flower": [("f", "زهرة", "زهرتان", "زهور"), ("f", "وردة", "وردتان", "ورود")],
    "bird": [("m", "طائر", "طائران", "طيور"), ("m", "عصفور", "عصفوران", "عصافير")],
}
_AR_ADJ = {  # (masc sg, fem sg, masc dual, fem dual); non-human plurals take the fem sg form
    "red": ("أحمر", "حمراء", "أحمران", "حمراوان"),
    "blue": ("أزرق", "زرقاء", "أزرقان", "زرقاوان"),
    "green": ("أخضر", "خضراء", "أخضران", "خضراوان"),
    "yellow": ("أصفر", "صفراء", "أصفران", "صفراوان"),
    "orange": ("برتقالي", "برتقالية", "برتقاليان", "برتقاليتان"),
    "purple": ("بنفسجي", "بنفسجية", "بنفسجيان", "بنفسجيتان"),
    "black": ("أسود", "سوداء", "أسودان", "سوداوان"),
    "white": ("أبيض", "بيضاء", "أبيضان", "بيضاوان"),
    "small": ("صغير", "صغيرة", "صغيران", "صغيرتان"),
    "large": ("كبير", "كبيرة", "كبيران", "كبيرتان"),
}
_AR_COLOR_NOUN = {
    "red": "الأحمر", "blue": "الأزرق", "green": "الأخضر", "yellow": "الأصفر",
    "orange": "البرتقالي", "purple": "البنفسجي", "black": "الأسود", "white": "الأبيض",
}
# numerals 3-10 by the gender of the counted noun's singular (polarity: masculine nouns take
# the numeral with ta marbuta, "ثلاثة بيوت"; feminine nouns the plain one, "ثلاث كرات")
_AR_NUM = {"m": {3: "ثلاثة", 4: "أربعة", 5: "خمسة"}, "f": {3: "ثلاث", 4: "أربع", 5: "خمس"}}
_AR_LOC = {
    "meadow": ["في مرج أخضر", "على العشب"],
    "beach": ["على الشاطئ", "بجانب البحر"],
    "room": ["في غرفة", "داخل غرفة"],
    "night": ["في الليل", "ليلاً", "تحت سماء الليل"],
    "snow": ["في الثلج", "على أرض مغطاة بالثلج"],
    "street": ["في الشارع", "على الطريق", "في شارع المدينة"],
}
_AR_POS = {
    "left": ["على اليسار", "في الجهة اليسرى"],
    "center": ["في الوسط", "في المنتصف"],
    "right": ["على اليمين", "في الجهة اليمنى"],
}
_AR_BG = {
    "meadow": ["يدور المشهد في مرج أخضر تحت سماء زرقاء.",
               "في الخلفية عشب أخضر وسماء صافية.",
               "الأرض مغطاة بالعشب والشمس مشرقة."],
    "beach": ["في الخلفية شاطئ رملي وبحر أزرق.",
              "إنه يوم مشمس على الشاطئ.",
              "الرمل والأمواج والسماء تشكل الخلفية."],
    "room": ["يدور المشهد داخل غرفة أرضيتها خشبية.",
             "كل شيء داخل غرفة ذات جدار فاتح وأرضية خشبية.",
             "يبدو المكان كغرفة هادئة من الداخل."],
    "night": ["الوقت ليل، والسماء مظلمة والقمر ساطع.",
              "الخلفية سماء ليلية مظلمة فيها نجوم صغيرة.",
              "لا يضيء المشهد إلا القمر."],
    "snow": ["الأرض مغطاة بالثلج الأبيض.",
             "إنه الشتاء والثلج في كل مكان.",
             "الخلفية حقل مغطى بالثلج تحت سماء رمادية."],
    "street": ["في الخلفية شارع في المدينة ومبانٍ رمادية.",
               "يمر في الخلفية طريق عليه خط أبيض متقطع.",
               "يدور المشهد على طريق إسفلتي في المدينة."],
}
_AR_FILLER = ["إنها رسمة بسيطة وملونة.", "الأسلوب بسيط كما في كتب الأطفال.", "الألوان زاهية وواضحة."]


def _ar_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool) -> tuple[str, str]:
    """Nominative noun phrase and the gender a preceding verb takes ("m" or "f")."""
    g, sg, dual, pl = rng.choice(_AR_NOUNS[obj["kind"]])
    c = obj["count"]
    form = (0 if g == "m" else 1) if c == 1 else ((2 if g == "m" else 3) if c == 2 else 1)
    size_w = _AR_ADJ[obj["size"]][form] if size else ""
    if not color:
        adjs = size_w
    elif rng.random() < 0.35:  # "in the colour X" (invariable) goes after the adjectives
        adjs = _join(size_w, "باللون " + _AR_COLOR_NOUN[obj["color"]])
    else:
        adjs = _join(_AR_ADJ[obj["color"]][form], size_w)
    if c == 1:
        return _join(sg, adjs), g
    if c == 2:
        return _join(dual, adjs), g
    det = "عدة" if vague else _AR_NUM[g][c]
    return _join(det, pl, adjs), "f"


def _ar(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _ar_np(p.main, rng, p.t_size, p.t_color, p.t_vague)
    loc = rng.choice(_AR_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_AR_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _ar_np(p.second, rng, False, True, False)
        title = _join(np1, "و" + np2, loc)
    else:
        title = _join(np1, pos, loc)

    np1, g = _ar_np(p.main, rng, p.b_size, True, p.b_vague)
    pos = rng.choice(_AR_POS[p.main["position"]]) if p.b_pos else ""
    mains = [
        _join("في الصورة", np1, pos),
        _join("يظهر" if g == "m" else "تظهر", "في الصورة", np1, pos),
        _join("يوجد" if g == "m" else "توجد", pos, np1),
    ]
    if pos:
        mains.append(_join(pos, np1))
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, g2 = _ar_np(p.second, rng, p.b2_size, p.b2_color, False)
        pos2 = rng.choice(_AR_POS[p.second["position"]]) if p.b2_pos else ""
        exist = "يوجد" if g2 == "m" else "توجد"
        sentences.append(_sent(rng.choice([
            _join("وهناك أيضاً", np2, pos2),
            _join("كما", exist, np2, pos2),
            _join("وإلى جانب ذلك", exist, np2),
        ])))
    bg = rng.choice(_AR_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_AR_FILLER))
    return title, " ".join(sentences)


_WRITERS: dict[str, Callable[[dict, random.Random], tuple[str, str]]] = {
    "en": _en, "de": _de, "fr": _fr, "es": _es, "ru": _ru, "ar": _ar,
}


def describe_scene(scene: dict, lang: str, seed: int | str = 0) -> tuple[str, str]:
    """(title, body) describing ``scene`` in ``lang``; different seeds give different paraphrases.

    Titles are short noun phrases; bodies are 2-4 sentences. Details (size, position, the second
    object group, a filler sentence) are included or omitted at random per call.
    """
    if lang not in _WRITERS:
        raise InputError(f"language {lang!r} is not supported by the synthetic generator; "
                         f"supported: {', '.join(SUPPORTED_LANGUAGES)}")
    _check_scene(scene, "to describe")
    title, body = _WRITERS[lang](scene, _rng("text", seed, lang))
    if len(body) <= len(title):  # never expected; keeps the "title shorter than body" contract
        body = _join(body, _sent(title))
    return title, body


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------

_RGB = {
    "red": (215, 38, 45), "blue": (36, 84, 214), "green": (40, 160, 62), "yellow": (242, 206, 40),
    "orange": (244, 134, 28), "purple": (136, 58, 178), "black": (28, 28, 30), "white": (246, 246, 246),
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
            d.line([x, y, x + rng.uniform(-1.5, 1.5) * u, y - rng.uniform(2, 4) * u], fill=_jitter((30, 110, 30), rng, 20), width=max(1, int(0.6 * u)))
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
        d.rectangle([wx, 10 * u, wx + 22 * u, 32 * u], fill=_jitter((170, 210, 240), rng, 15), outline=(255, 255, 255), width=int(1.2 * u))
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
    d.polygon([(cx - s / 2, by), (cx + s / 2, by), (cx + rng.uniform(-0.1, 0.1) * s, by - h)], fill=col, outline=_shade(col, 0.55))


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
    d.rounded_rectangle([cx - w / 2, body_b - s * 0.28, cx + w / 2, body_b], radius=s * 0.06, fill=col, outline=_shade(col, 0.55))
    d.polygon([(cx - w * 0.3, body_b - s * 0.28), (cx - w * 0.18, body_b - s * 0.5), (cx + w * 0.18, body_b - s * 0.5), (cx + w * 0.3, body_b - s * 0.28)], fill=_shade(col, 0.85))
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
        d.polygon([(hx + ex * hr * 0.9, hy - hr * 0.3), (hx + ex * hr * 0.2, hy - hr * 0.8), (hx + ex * hr * 0.8, hy - hr * 1.5)], fill=col, outline=out)
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
    d.ellipse([cx - s * 0.38, cy - s * 0.22, cx + s * 0.38, cy + s * 0.22], fill=col, outline=_shade(col, 0.55) if sum(col) > 150 else (120, 120, 120))
    hx = cx + side * s * 0.34
    d.ellipse([hx - s * 0.16, cy - s * 0.36, hx + s * 0.16, cy - s * 0.04], fill=col)
    d.polygon([(hx + side * s * 0.14, cy - s * 0.24), (hx + side * s * 0.32, cy - s * 0.18), (hx + side * s * 0.14, cy - s * 0.12)], fill=(245, 150, 30))
    d.ellipse([hx + side * s * 0.04 - s * 0.03, cy - s * 0.25, hx + side * s * 0.04 + s * 0.03, cy - s * 0.19], fill=(0, 0, 0) if sum(col) > 150 else (255, 255, 255))
    d.polygon([(cx - side * s * 0.1, cy - s * 0.05), (cx - side * s * 0.3, cy - s * 0.45), (cx + side * s * 0.1, cy - s * 0.05)], fill=_shade(col, 0.75))


_DRAWERS: dict[str, Callable[..., None]] = {
    "ball": _draw_ball, "box": _draw_box, "triangle": _draw_triangle, "star": _draw_star,
    "house": _draw_house, "tree": _draw_tree, "car": _draw_car, "cat": _draw_cat,
    "flower": _draw_flower, "bird": _draw_bird,
}
_FLYING = {"star", "bird"}
_POS_X = {"left": 0.22, "center": 0.5, "right": 0.78}


def _draw_object(d: ImageDraw.ImageDraw, kind: str, cx: float, by: float, s: float, col: tuple, rng: random.Random) -> None:
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


# --------------------------------------------------------------------------------------------
# the dataset
# --------------------------------------------------------------------------------------------


def _split(seed: int, i: int) -> str:
    u = _rng("split", seed, i).random()
    return "train" if u < _SPLIT_CUTS[0] else ("val" if u < _SPLIT_CUTS[1] else "test")


def _scene_for(seed: int, i: int) -> tuple[dict, int | None]:
    """Scene of item ``i`` and, for re-staged items, the index of the item it copies."""
    rng = _rng("scene", seed, i)
    if i >= 10 and rng.random() < _RESTAGE_RATE:
        j = rng.randrange(i)
        src, _ = _scene_for(seed, j)
        return {"background": src["background"], "objects": [dict(o) for o in src["objects"]]}, j
    return sample_scene(rng), None


def _item_id(i: int) -> str:
    return f"syn-{i:06d}"


def _validate_args(n_items: int, languages: Sequence[str], image_size: int) -> list[str]:
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
        raise InputError(f"n_items must be a positive integer, got {n_items!r}")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 32:
        raise InputError(f"image_size must be an integer >= 32 (pixels), got {image_size!r}")
    if isinstance(languages, str):
        raise InputError(f"languages must be a sequence of codes like ('en', 'de'), got the string {languages!r}")
    langs = list(languages)
    if not langs:
        raise InputError("languages must not be empty")
    bad = [lang for lang in langs if lang not in _WRITERS]
    if bad:
        raise InputError(f"unsupported language(s) {bad} for the synthetic generator; "
                         f"supported: {', '.join(SUPPORTED_LANGUAGES)}")
    if len(set(langs)) != len(langs):
        raise InputError(f"languages contains duplicates: {langs}")
    return langs


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def generate(
    out_dir: str | Path,
    n_items: int = 2400,
    languages: Sequence[str] = ("en", "de", "fr", "es", "ru", "ar"),
    seed: int = 0,
    image_size: int = 160,
) -> None:
    """Generate the SYNTHETIC scenes dataset into ``out_dir`` in the prepared format.

    Writes ``dataset.json``, ``items.csv`` (one row per item and language; split train/val/test
    ~80/10/10 per item), ``images/syn-XXXXXX.png``, ``images.csv`` and ``scenes.jsonl`` (ground
    truth scene per item). Everything is built in a temporary sibling folder that replaces
    ``out_dir`` only when complete; an existing ``out_dir`` must be empty or a previous prepared
    dataset (it has a ``dataset.json``), otherwise :class:`InputError` is raised.
    """
    langs = _validate_args(n_items, languages, image_size)
    out = Path(out_dir)
    if out.exists():
        if not out.is_dir():
            raise InputError(f"{out}: exists and is not a folder; choose another output path")
        if any(out.iterdir()) and not (out / "dataset.json").is_file():
            raise InputError(f"{out}: exists, is not empty and is not a prepared dataset "
                             "(no dataset.json); refusing to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        _generate_into(tmp, n_items, langs, seed, image_size)
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.replace(out, old / "d")
            try:
                os.replace(tmp, out)
            except BaseException:
                os.replace(old / "d", out)  # put the previous dataset back
                raise
            finally:
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise


def _generate_into(root: Path, n_items: int, langs: list[str], seed: int, image_size: int) -> None:
    (root / "images").mkdir()
    item_rows: list[tuple[str, ...]] = []
    image_rows: list[tuple[str, str]] = []
    scene_lines: list[str] = []
    for i in range(n_items):
        item_id = _item_id(i)
        image_id = f"{item_id}.png"
        scene, src = _scene_for(seed, i)
        split = _split(seed, i)
        for lang in langs:
            title, body = describe_scene(scene, lang, f"{seed}|{i}")
            item_rows.append((item_id, lang, image_id, title, body, split))
        img = render_scene(scene, image_size, _rng("image", seed, i))
        img.save(root / "images" / image_id, format="PNG", optimize=False, compress_level=6)
        image_rows.append((image_id, f"images/{image_id}"))
        record = {"item_id": item_id, **scene}
        if src is not None:
            record["same_scene_as"] = _item_id(src)
        scene_lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    _write_csv(root / "items.csv", ("item_id", "lang", "image_id", "title", "body", "split"), item_rows)
    _write_csv(root / "images.csv", ("image_id", "path"), image_rows)
    (root / "scenes.jsonl").write_text("\n".join(scene_lines) + "\n", encoding="utf-8")
    meta = {
        "name": DATASET_NAME,
        "synthetic": True,
        "parallel": True,
        "languages": langs,
        "description": DESCRIPTION,
        "license": "CC0-1.0 (generated by backretrieval.synthetic; no third-party content)",
        "generator": {
            "module": "backretrieval.synthetic",
            "version": GENERATOR_VERSION,
            "n_items": n_items,
            "seed": seed,
            "image_size": image_size,
        },
    }
    (root / "dataset.json").write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def load_scenes(out_dir: str | Path) -> dict[str, dict]:
    """item_id -> ground-truth scene dict, read from ``<out_dir>/scenes.jsonl``."""
    path = Path(out_dir) / "scenes.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: missing (only datasets made by backretrieval.synthetic have scenes)")
    scenes: dict[str, dict] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n} is not valid JSON ({exc})") from exc
        if not isinstance(rec, dict) or "item_id" not in rec:
            raise InputError(f"{path}: line {n} lacks field 'item_id'")
        item_id = rec.pop("item_id")
        _check_scene(rec, f"{item_id} ({path}, line {n})")
        if item_id in scenes:
            raise InputError(f"{path}: duplicate item_id {item_id!r} at line {n}")
        scenes[item_id] = rec
    return scenes
