"""SYNTHETIC caption writer for a Slavic language: Russian (cases, three genders, numeral government)."""

from __future__ import annotations

import random

from .captions_base import _cap, _join, _Plan, _sent

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
