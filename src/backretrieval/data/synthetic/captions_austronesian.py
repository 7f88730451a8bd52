"""SYNTHETIC caption writer for an Austronesian language: Indonesian (classifiers, no inflection)."""

from __future__ import annotations

import random

from .captions_base import _cap, _join, _Plan, _sent

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
