"""SYNTHETIC caption writers for the Romance languages: French and Spanish."""

from __future__ import annotations

import random

from .captions_base import _cap, _join, _Plan, _sent

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
