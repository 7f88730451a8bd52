"""SYNTHETIC caption writers for the Germanic languages: English and German."""

from __future__ import annotations

import random

from .captions_base import _cap, _join, _Plan, _sent

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
    "red": ["red"],
    "blue": ["blue"],
    "green": ["green"],
    "yellow": ["yellow"],
    "orange": ["orange"],
    "purple": ["purple", "violet"],
    "black": ["black"],
    "white": ["white"],
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
    "meadow": [
        "The scene takes place on a green meadow under a blue sky.",
        "In the background there is green grass and a bright sky.",
        "The ground is covered with grass and the sun is shining.",
    ],
    "beach": [
        "The background is a sandy beach with the blue sea behind it.",
        "It is a sunny day at the beach.",
        "Sand, waves and sky fill the background.",
    ],
    "room": [
        "The scene is indoors, with a plain wall and a wooden floor.",
        "Everything is inside a room with a wooden floor.",
        "It looks like the inside of a quiet room.",
    ],
    "night": [
        "It is night: the sky is dark and the moon is shining.",
        "The background is a dark night sky with small stars.",
        "Only the moon lights up the scene.",
    ],
    "snow": [
        "The ground is covered with white snow.",
        "It is winter and there is snow everywhere.",
        "The background is a snowy field under a grey sky.",
    ],
    "street": [
        "The background is a city street with grey buildings.",
        "In the background runs a road with a dashed white line.",
        "The scene is set on an asphalt road in town.",
    ],
}
_EN_FILLER = [
    "It is a simple, colourful drawing.",
    "The style is flat and cartoon-like.",
    "The colours are bright and plain.",
]


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
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("There", be2, "also", np2, pos2),
                        _join(np2, be2, "also in the picture", pos2),
                        _join("Besides that, we can see", np2, pos2),
                    ]
                )
            )
        )
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
    "red": ["rot"],
    "blue": ["blau"],
    "green": ["grün"],
    "yellow": ["gelb"],
    "orange": ["orangefarben"],
    "purple": ["violett", "lilafarben"],
    "black": ["schwarz"],
    "white": ["weiß"],
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
    "meadow": [
        "Die Szene spielt auf einer grünen Wiese unter blauem Himmel.",
        "Im Hintergrund sieht man Gras und einen hellen Himmel.",
        "Der Boden ist mit Gras bedeckt, und die Sonne scheint.",
    ],
    "beach": [
        "Im Hintergrund liegt ein Sandstrand mit blauem Meer.",
        "Es ist ein sonniger Tag am Strand.",
        "Sand, Wellen und Himmel bilden den Hintergrund.",
    ],
    "room": [
        "Die Szene spielt in einem Zimmer mit Holzboden.",
        "Alles befindet sich in einem Raum mit heller Wand und Holzboden.",
        "Es sieht aus wie das Innere eines ruhigen Zimmers.",
    ],
    "night": [
        "Es ist Nacht, der Himmel ist dunkel und der Mond scheint.",
        "Der Hintergrund ist ein dunkler Nachthimmel mit kleinen Sternen.",
        "Nur der Mond beleuchtet die Szene.",
    ],
    "snow": [
        "Der Boden ist mit weißem Schnee bedeckt.",
        "Es ist Winter, und überall liegt Schnee.",
        "Der Hintergrund ist ein verschneites Feld unter grauem Himmel.",
    ],
    "street": [
        "Im Hintergrund ist eine Stadtstraße mit grauen Gebäuden.",
        "Hinten verläuft eine Straße mit weißer Mittellinie.",
        "Die Szene spielt auf einer asphaltierten Straße in der Stadt.",
    ],
}
_DE_FILLER = [
    "Es ist eine einfache, bunte Zeichnung.",
    "Der Stil ist schlicht, wie in einem Kinderbuch.",
    "Die Farben sind kräftig und flächig.",
]


def _de_np(
    obj: dict, rng: random.Random, case: str, size: bool, color: bool, vague: bool, digits: bool
) -> tuple[str, bool]:
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
        main = [
            _join("Das Bild zeigt", np1, pos),
            _join("Man sieht", pos, np1),
            "",
            "",
            _join("Auf der Zeichnung erkennt man", pos, np1),
        ][t]
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
