"""SYNTHETIC captions: every language written independently from the scene with its own
random stream (synonyms, templates, word order, optional details), see the package docstring."""

from __future__ import annotations

import random
from collections.abc import Callable

from ...errors import InputError
from .scenes import _check_scene, _rng

SUPPORTED_LANGUAGES = ("en", "de", "fr", "es", "ru", "ar", "id")


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
    "meadow": [
        "La scène se passe dans une prairie verte sous un ciel bleu.",
        "À l'arrière-plan, on voit de l'herbe et un ciel clair.",
        "Le sol est couvert d'herbe et le soleil brille.",
    ],
    "beach": [
        "L'arrière-plan montre une plage de sable et la mer bleue.",
        "C'est une journée ensoleillée à la plage.",
        "Le sable, les vagues et le ciel forment le décor.",
    ],
    "room": [
        "La scène se passe à l'intérieur, dans une pièce au plancher en bois.",
        "Tout se trouve dans une pièce avec un mur clair et un parquet.",
        "On dirait l'intérieur d'une pièce calme.",
    ],
    "night": [
        "C'est la nuit : le ciel est sombre et la lune brille.",
        "Le fond est un ciel nocturne avec de petites étoiles.",
        "Seule la lune éclaire la scène.",
    ],
    "snow": [
        "Le sol est couvert de neige blanche.",
        "C'est l'hiver et il y a de la neige partout.",
        "Le fond est un champ enneigé sous un ciel gris.",
    ],
    "street": [
        "À l'arrière-plan, on voit une rue avec des immeubles gris.",
        "Une route avec une ligne blanche traverse le décor.",
        "La scène se passe sur une route goudronnée en ville.",
    ],
}
_FR_FILLER = [
    "C'est un dessin simple et coloré.",
    "Le style est épuré, comme dans un livre pour enfants.",
    "Les couleurs sont vives et unies.",
]


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
        mains += [f"{_cap(pos)}, on aperçoit {np1}", _join(np1, "se trouvent" if plural else "se trouve", pos)]
    else:
        mains.append(_join(np1, "occupent" if plural else "occupe", "la scène"))
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, plural2 = _fr_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_FR_POS[p.second["position"]]) if p.b2_pos else ""
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("Il y a aussi", np2, pos2),
                        _join("On remarque également", np2, pos2),
                        _join(np2, "complètent" if plural2 else "complète", "la scène"),
                    ]
                )
            )
        )
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
    "orange": [
        ("naranja", "naranja", "naranjas", "naranjas"),
        ("anaranjado", "anaranjada", "anaranjados", "anaranjadas"),
    ],
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
    "meadow": [
        "La escena transcurre en un prado verde bajo un cielo azul.",
        "Al fondo se ven hierba y un cielo claro.",
        "El suelo está cubierto de hierba y brilla el sol.",
    ],
    "beach": [
        "Al fondo hay una playa de arena y el mar azul.",
        "Es un día soleado en la playa.",
        "La arena, las olas y el cielo forman el fondo.",
    ],
    "room": [
        "La escena ocurre en una habitación con suelo de madera.",
        "Todo está dentro de una sala con una pared clara y suelo de madera.",
        "Parece el interior de una habitación tranquila.",
    ],
    "night": [
        "Es de noche: el cielo está oscuro y brilla la luna.",
        "El fondo es un cielo nocturno con pequeñas estrellas.",
        "Solo la luna ilumina la escena.",
    ],
    "snow": [
        "El suelo está cubierto de nieve blanca.",
        "Es invierno y hay nieve por todas partes.",
        "El fondo es un campo nevado bajo un cielo gris.",
    ],
    "street": [
        "Al fondo se ve una calle con edificios grises.",
        "Una carretera con una línea blanca cruza el fondo.",
        "La escena ocurre en una calle asfaltada de la ciudad.",
    ],
}
_ES_FILLER = [
    "Es un dibujo sencillo y colorido.",
    "El estilo es plano, como en un libro infantil.",
    "Los colores son vivos y uniformes.",
]


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
    mains = [
        _join("La imagen muestra", np1, pos),
        _join(f"Se ve{n}", np1, pos),
        _join("Hay", np1, pos),
        _join(f"En el dibujo aparece{n}", np1, pos),
    ]
    if pos:
        mains.append(_join(pos, "hay", np1))
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, plural2 = _es_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_ES_POS[p.second["position"]]) if p.b2_pos else ""
        n2 = "n" if plural2 else ""
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("También hay", np2, pos2),
                        _join(f"Además, se ve{n2}", np2, pos2),
                        _join(np2, f"completa{n2}", "la escena"),
                    ]
                )
            )
        )
    bg = rng.choice(_ES_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_ES_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# Russian
# --------------------------------------------------------------------------------------------

_RU_NOUNS = {  # (gender, nom sg, gen sg, nom pl, gen pl)
    "ball": [
        ("m", "мяч", "мяча", "мячи", "мячей"),
        ("m", "шар", "шара", "шары", "шаров"),
        ("m", "мячик", "мячика", "мячики", "мячиков"),
    ],
    "box": [
        ("f", "коробка", "коробки", "коробки", "коробок"),
        ("m", "ящик", "ящика", "ящики", "ящиков"),
        ("m", "кубик", "кубика", "кубики", "кубиков"),
    ],
    "triangle": [
        ("m", "треугольник", "треугольника", "треугольники", "треугольников"),
        ("f", "пирамида", "пирамиды", "пирамиды", "пирамид"),
    ],
    "star": [("f", "звезда", "звезды", "звёзды", "звёзд"), ("f", "звёздочка", "звёздочки", "звёздочки", "звёздочек")],
    "house": [("m", "дом", "дома", "дома", "домов"), ("m", "домик", "домика", "домики", "домиков")],
    "tree": [("n", "дерево", "дерева", "деревья", "деревьев")],
    "car": [
        ("f", "машина", "машины", "машины", "машин"),
        ("m", "автомобиль", "автомобиля", "автомобили", "автомобилей"),
    ],
    "cat": [
        ("f", "кошка", "кошки", "кошки", "кошек"),
        ("m", "кот", "кота", "коты", "котов"),
        ("m", "котёнок", "котёнка", "котята", "котят"),
    ],
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
    "small": [
        ("маленький", "маленькая", "маленькое", "маленькие", "маленьких"),
        ("небольшой", "небольшая", "небольшое", "небольшие", "небольших"),
    ],
    "large": [
        ("большой", "большая", "большое", "большие", "больших"),
        ("крупный", "крупная", "крупное", "крупные", "крупных"),
    ],
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
    "meadow": [
        "Действие происходит на зелёном лугу под голубым небом.",
        "На заднем плане трава и светлое небо.",
        "Земля покрыта травой, светит солнце.",
    ],
    "beach": ["На заднем плане песчаный пляж и синее море.", "Солнечный день на пляже.", "Фон — песок, волны и небо."],
    "room": [
        "Действие происходит в комнате с деревянным полом.",
        "Всё находится в помещении со светлой стеной и деревянным полом.",
        "Похоже на интерьер тихой комнаты.",
    ],
    "night": [
        "Сейчас ночь: небо тёмное, светит луна.",
        "Фон — тёмное ночное небо с маленькими звёздами.",
        "Сцену освещает только луна.",
    ],
    "snow": ["Земля покрыта белым снегом.", "Зима, повсюду лежит снег.", "Фон — заснеженное поле под серым небом."],
    "street": [
        "На заднем плане городская улица с серыми зданиями.",
        "Сзади проходит дорога с белой разметкой.",
        "Действие происходит на асфальтовой дороге в городе.",
    ],
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
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("ещё на картинке есть", np2, pos2),
                        f"рядом — {np2}",
                        _join("кроме того,", pos2 or "здесь", _RU_SHOWN[agr2], np2),
                    ]
                )
            )
        )
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
    "red": "الأحمر",
    "blue": "الأزرق",
    "green": "الأخضر",
    "yellow": "الأصفر",
    "orange": "البرتقالي",
    "purple": "البنفسجي",
    "black": "الأسود",
    "white": "الأبيض",
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
    "meadow": [
        "يدور المشهد في مرج أخضر تحت سماء زرقاء.",
        "في الخلفية عشب أخضر وسماء صافية.",
        "الأرض مغطاة بالعشب والشمس مشرقة.",
    ],
    "beach": ["في الخلفية شاطئ رملي وبحر أزرق.", "إنه يوم مشمس على الشاطئ.", "الرمل والأمواج والسماء تشكل الخلفية."],
    "room": [
        "يدور المشهد داخل غرفة أرضيتها خشبية.",
        "كل شيء داخل غرفة ذات جدار فاتح وأرضية خشبية.",
        "يبدو المكان كغرفة هادئة من الداخل.",
    ],
    "night": [
        "الوقت ليل، والسماء مظلمة والقمر ساطع.",
        "الخلفية سماء ليلية مظلمة فيها نجوم صغيرة.",
        "لا يضيء المشهد إلا القمر.",
    ],
    "snow": ["الأرض مغطاة بالثلج الأبيض.", "إنه الشتاء والثلج في كل مكان.", "الخلفية حقل مغطى بالثلج تحت سماء رمادية."],
    "street": [
        "في الخلفية شارع في المدينة ومبانٍ رمادية.",
        "يمر في الخلفية طريق عليه خط أبيض متقطع.",
        "يدور المشهد على طريق إسفلتي في المدينة.",
    ],
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
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("وهناك أيضاً", np2, pos2),
                        _join("كما", exist, np2, pos2),
                        _join("وإلى جانب ذلك", exist, np2),
                    ]
                )
            )
        )
    bg = rng.choice(_AR_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_AR_FILLER))
    return title, " ".join(sentences)


# --------------------------------------------------------------------------------------------
# Indonesian
# --------------------------------------------------------------------------------------------

_ID_NOUNS = {  # (classifier, noun): no grammatical number or gender; counted nouns take a classifier
    "ball": [("buah", "bola")],
    "box": [("buah", "kotak"), ("buah", "peti"), ("buah", "kubus")],
    "triangle": [("buah", "segitiga"), ("buah", "piramida")],
    "star": [("buah", "bintang")],
    "house": [("buah", "rumah"), ("buah", "pondok")],
    "tree": [("batang", "pohon")],
    "car": [("buah", "mobil")],
    "cat": [("ekor", "kucing"), ("ekor", "anak kucing")],
    "flower": [("kuntum", "bunga")],
    "bird": [("ekor", "burung"), ("ekor", "burung kicau")],
}
_ID_COLORS = {
    "red": ["merah"],
    "blue": ["biru"],
    "green": ["hijau"],
    "yellow": ["kuning"],
    "orange": ["oranye", "jingga"],
    "purple": ["ungu"],
    "black": ["hitam"],
    "white": ["putih"],
}
_ID_SIZES = {"small": ["kecil", "mungil"], "large": ["besar", "raksasa"]}
_ID_NUM = {2: "dua", 3: "tiga", 4: "empat", 5: "lima"}
_ID_LOC = {
    "meadow": ["di padang rumput", "di atas rumput", "di lapangan hijau"],
    "beach": ["di pantai", "di tepi laut", "di pantai berpasir"],
    "room": ["di dalam ruangan", "di dalam rumah", "di ruang tamu"],
    "night": ["pada malam hari", "di bawah langit malam", "dalam gelap"],
    "snow": ["di salju", "di padang bersalju", "di tengah salju musim dingin"],
    "street": ["di jalan", "di jalan kota", "di jalan raya"],
}
_ID_POS = {
    "left": ["di sebelah kiri", "di sisi kiri"],
    "center": ["di tengah", "di bagian tengah"],
    "right": ["di sebelah kanan", "di sisi kanan"],
}
_ID_BG = {
    "meadow": [
        "Pemandangannya berupa padang rumput hijau di bawah langit biru.",
        "Di latar belakang ada rumput hijau dan langit yang cerah.",
        "Tanahnya tertutup rumput dan matahari bersinar.",
    ],
    "beach": [
        "Latar belakangnya adalah pantai berpasir dengan laut biru.",
        "Hari itu cerah di pantai.",
        "Pasir, ombak, dan langit mengisi latar belakang.",
    ],
    "room": [
        "Adegannya ada di dalam ruangan dengan dinding polos dan lantai kayu.",
        "Semuanya berada di dalam kamar berlantai kayu.",
        "Tampaknya ini bagian dalam sebuah ruangan yang tenang.",
    ],
    "night": [
        "Hari sudah malam: langit gelap dan bulan bersinar.",
        "Latar belakangnya langit malam yang gelap dengan bintang-bintang kecil.",
        "Hanya bulan yang menerangi pemandangan ini.",
    ],
    "snow": [
        "Tanahnya tertutup salju putih.",
        "Sedang musim dingin dan ada salju di mana-mana.",
        "Latar belakangnya padang bersalju di bawah langit kelabu.",
    ],
    "street": [
        "Latar belakangnya jalan kota dengan gedung-gedung abu-abu.",
        "Di latar belakang ada jalan dengan garis putih putus-putus.",
        "Adegannya ada di jalan beraspal di tengah kota.",
    ],
}
_ID_FILLER = [
    "Ini gambar sederhana yang berwarna-warni.",
    "Gayanya datar seperti kartun.",
    "Warnanya cerah dan polos.",
]


def _id_np(obj: dict, rng: random.Random, size: bool, color: bool, vague: bool, digits: bool) -> tuple[str, bool]:
    clf, noun = rng.choice(_ID_NOUNS[obj["kind"]])
    # adjectives follow the noun; colour plain ("merah") or with "berwarna" ("berwarna merah")
    col = rng.choice(_ID_COLORS[obj["color"]]) if color else ""
    if col and rng.random() < 0.3:
        col = "berwarna " + col
    siz = rng.choice(_ID_SIZES[obj["size"]]) if size else ""
    adjs = [siz, col] if col.startswith("berwarna") or rng.random() < 0.5 else [col, siz]
    head = _join(noun, *adjs)
    if obj["count"] == 1:
        return _join(f"se{clf}" if rng.random() < 0.8 else "", head), False
    if vague:
        return _join("beberapa", head), True
    num = str(obj["count"]) if digits else _ID_NUM[obj["count"]]
    return _join(num, clf if rng.random() < 0.5 else "", head), True


def _id(scene: dict, rng: random.Random) -> tuple[str, str]:
    p = _Plan(rng, scene)
    np1, _ = _id_np(p.main, rng, p.t_size, p.t_color, p.t_vague, p.digits)
    loc = rng.choice(_ID_LOC[p.bg]) if p.t_loc else ""
    pos = rng.choice(_ID_POS[p.main["position"]]) if p.t_pos else ""
    if p.t_second:
        np2, _ = _id_np(p.second, rng, False, True, False, False)
        title = _join(np1, "dan", np2, loc)
    else:
        title = rng.choice([_join(np1, pos, loc), _join(np1, pos, loc), _join("Gambar", np1, pos, loc)])
    title = _cap(title)

    np1, _ = _id_np(p.main, rng, p.b_size, True, p.b_vague, False)
    pos = rng.choice(_ID_POS[p.main["position"]]) if p.b_pos else ""
    mains = [
        _join("Gambar ini menunjukkan", np1, pos),
        _join("Ada", np1, pos),
        _join("Terlihat", np1, pos),
        _join("Dalam gambar ini kita melihat", np1, pos),
    ]
    if pos:
        mains.append(f"{_cap(pos)}, ada {np1}")
    sentences = [_sent(rng.choice(mains))]
    if p.b_second:
        np2, _ = _id_np(p.second, rng, p.b2_size, p.b2_color, False, False)
        pos2 = rng.choice(_ID_POS[p.second["position"]]) if p.b2_pos else ""
        sentences.append(
            _sent(
                rng.choice(
                    [
                        _join("Ada juga", np2, pos2),
                        _join("Selain itu, terlihat", np2, pos2),
                        _join(np2, "juga tampak dalam gambar", pos2),
                    ]
                )
            )
        )
    bg = rng.choice(_ID_BG[p.bg])
    sentences.insert(0, bg) if p.bg_first else sentences.append(bg)
    if p.b_filler:
        sentences.append(rng.choice(_ID_FILLER))
    return title, " ".join(sentences)


_WRITERS: dict[str, Callable[[dict, random.Random], tuple[str, str]]] = {
    "en": _en,
    "de": _de,
    "fr": _fr,
    "es": _es,
    "ru": _ru,
    "ar": _ar,
    "id": _id,
}


def describe_scene(scene: dict, lang: str, seed: int | str = 0) -> tuple[str, str]:
    """(title, body) describing ``scene`` in ``lang``; different seeds give different paraphrases.

    Titles are short noun phrases; bodies are 2-4 sentences. Details (size, position, the second
    object group, a filler sentence) are included or omitted at random per call.
    """
    if lang not in _WRITERS:
        raise InputError(
            f"language {lang!r} is not supported by the synthetic generator; "
            f"supported: {', '.join(SUPPORTED_LANGUAGES)}"
        )
    _check_scene(scene, "to describe")
    title, body = _WRITERS[lang](scene, _rng("text", seed, lang))
    if len(body) <= len(title):  # never expected; keeps the "title shorter than body" contract
        body = _join(body, _sent(title))
    return title, body
