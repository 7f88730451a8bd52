"""SYNTHETIC caption writer for a Semitic language: Arabic (dual, gender polarity of numerals)."""

from __future__ import annotations

import random

from .captions_base import _join, _Plan, _sent

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
