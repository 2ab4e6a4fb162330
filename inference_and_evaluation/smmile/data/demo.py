"""A small synthetic dataset in the exact SMMILE schema, generated deterministically from a seed: PIL drawings (RGB,
L, RGBA; varied sizes) that answer every question; the first query image is a JPEG with EXIF orientation 6, as
phone photos often are, which every decoder must turn upright (`datasets` does, and so do we)."""

from __future__ import annotations

import io
import json
import os
import random
import uuid
from pathlib import Path

from .. import fsguard
from ..protocol.problem import ORIENTATION
from . import variants
from .parquet import DATASET_OWNER, check_dataset_dir, problems_to_records, write_dataset
from .schema import FLAG_VOCABULARY, SPECIALITIES, group

DEMO_VERSION = 2
DEMO_OWNER = "smmile data demo"  # `make_demo`'s output-folder marker and the datasets' `generator`
DEMO_INFO = "smmile_demo.json"  # beside each demo dataset: generator, version, seed (and SMMILE++'s variant)
COLOURS = {"Red.": (200, 30, 30), "Black.": (15, 15, 15), "White.": (245, 245, 245), "Purple.": (120, 40, 150),
           "Yellow.": (230, 210, 40), "Blue.": (40, 70, 200)}
SHAPES = ["Circle", "Square", "Triangle"]
QUESTION_TYPES = {  # question, answer vocabulary, answer_format, cognitive_process
    "colour": ("What color can be seen in the abnormal lesion?", list(COLOURS), "free response", "classification/diagnosis"),
    "count": ("How many nodules are visible in this image?", ["1", "2", "3", "4"], "numerical", "regression/quantitative"),
    "side": ("On which side is the opacity located?", ["Left", "Right"], "multiple choice", "reasoning classification"),
    "shape": ("What is the shape of the highlighted structure?", SHAPES, "multiple choice", "classification/diagnosis"),
    "fracture": ("Is there a fracture line in this image?", ["Yes", "No"], "binary(yes/no)", "reasoning classification"),
}
MODES = ["RGB", "L", "RGBA"]


def _draw(kind: str, answer: str, rng: random.Random, mode: str) -> bytes:
    from PIL import Image, ImageDraw

    w, h = rng.randint(48, 160), rng.randint(48, 160)
    img = Image.new("RGB", (w, h), (rng.randint(150, 210), rng.randint(110, 160), rng.randint(90, 130)))
    d = ImageDraw.Draw(img)
    r = max(4, min(w, h) // 6)
    if kind == "colour":
        cx, cy = rng.randint(r, w - r), rng.randint(r, h - r)
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=COLOURS[answer])
    elif kind == "count":
        for i in range(int(answer)):
            cx = (i + 1) * w // (int(answer) + 1)
            d.ellipse([cx - r // 2, h // 2 - r // 2, cx + r // 2, h // 2 + r // 2], fill=(250, 250, 250))
    elif kind == "side":
        x0 = rng.randint(2, w // 4) if answer == "Left" else rng.randint(w // 2 + 2, w - w // 4)
        d.rectangle([x0, h // 3, x0 + w // 5, 2 * h // 3], fill=(235, 235, 235))
    elif kind == "shape":
        box = [w // 2 - r, h // 2 - r, w // 2 + r, h // 2 + r]
        if answer == "Circle":
            d.ellipse(box, outline=(0, 0, 0), width=2)
        elif answer == "Square":
            d.rectangle(box, outline=(0, 0, 0), width=2)
        else:
            d.polygon([(w // 2, h // 2 - r), (w // 2 - r, h // 2 + r), (w // 2 + r, h // 2 + r)], outline=(0, 0, 0))
    elif answer == "Yes":
        d.line([(rng.randint(0, w // 3), 0), (rng.randint(2 * w // 3, w), h)], fill=(10, 10, 10), width=3)
    out = img.convert(mode)
    if mode == "RGBA":
        out.putalpha(rng.randint(180, 255))
    buf = io.BytesIO()
    out.save(buf, format="PNG")
    return buf.getvalue()


def exif_rotated_jpeg(png: bytes) -> bytes:
    """The same picture as a JPEG stored sideways with EXIF orientation 6."""
    from PIL import Image

    exif = Image.Exif()
    exif[ORIENTATION] = 6
    buf = io.BytesIO()
    img = Image.open(io.BytesIO(png)).convert("RGB").transpose(Image.Transpose.ROTATE_90)
    img.save(buf, format="JPEG", quality=95, exif=exif.tobytes())
    return buf.getvalue()


def _answers(vocab: list[str], n_rows: int, rng: random.Random) -> list[str]:
    """Answers of a chunk with deliberate repeats; the query answer is taught by at least one example."""
    pool = rng.sample(vocab, min(len(vocab), max(2, n_rows - 1)))
    answers = [rng.choice(pool) for _ in range(n_rows - 1)]
    if len(set(answers)) == len(answers) and len(answers) > 2:
        answers[-1] = answers[0]  # a repeated answer, so MCQA de-duplication matters
    query = rng.choice(answers) if rng.random() < 0.75 else rng.choice(vocab)
    return answers + [query]


def generate_records(seed: int = 42, n_problems: int = 24) -> list[dict]:
    rng = random.Random(seed)
    sizes = [2, 3, 4, 5, 6] * (n_problems // 5 + 1)
    rng.shuffle(sizes)
    sizes = sizes[:n_problems]
    sizes[rng.randrange(n_problems)] = 10  # one problem with many examples
    problems = []
    for i, n_icl in enumerate(sizes):
        kind = list(QUESTION_TYPES)[i % len(QUESTION_TYPES)]
        question, vocab, fmt, cognitive = QUESTION_TYPES[kind]
        pid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        flags = {"flag_answer_format": fmt, "flag_image_type": rng.choice(FLAG_VOCABULARY["flag_image_type"]),
                 "flag_cognitive_process": cognitive, "flag_rarity": rng.choice(FLAG_VOCABULARY["flag_rarity"]),
                 "flag_difficulty_llms": rng.choice(FLAG_VOCABULARY["flag_difficulty_llms"]),
                 "speciality": rng.choice(SPECIALITIES)}
        rows = []
        for order, answer in enumerate(_answers(vocab, n_icl + 1, rng)):
            image = _draw(kind, answer, rng, MODES[(i + order) % len(MODES)])
            rows.append({"problem_id": pid, "order": order, "question": question, "answer": answer,
                         "image": {"bytes": image, "path": f"{pid[:8]}_{order}.png"},
                         "image_url": f"https://example.org/smmile-demo/{pid[:8]}_{order}.png", **flags})
        rng.shuffle(rows)  # physical row order differs from `order`: loaders must sort
        problems.append((pid, rows))
    problems.sort(key=lambda p: p[0])  # SMMILE lists problems in ascending problem_id
    query = max(problems[0][1], key=lambda r: r["order"])
    query["image"] = {"bytes": exif_rotated_jpeg(query["image"]["bytes"]),
                      "path": query["image"]["path"].replace(".png", ".jpg")}
    query["image_url"] = query["image_url"].replace(".png", ".jpg")
    return [row for _, rows in problems for row in rows]


def write_demo(out: Path, seed: int = 42) -> dict[str, Path]:
    """The demo SMMILE set in `out/smmile` and its permuted SMMILE++-style set in `out/plusplus`."""
    records = generate_records(seed)
    info = {"generator": DEMO_OWNER, "version": DEMO_VERSION, "seed": seed}
    base = write_dataset(records, Path(out) / "smmile", extra_files={DEMO_INFO: json.dumps(info, indent=2)})
    plus = write_dataset(problems_to_records(variants.permute(group(records), seed=seed)), Path(out) / "plusplus",
                         extra_files={DEMO_INFO: json.dumps({**info, "variant": "permute"}, indent=2)})
    return {"smmile": base, "plusplus": plus}


def make_demo(out: str | os.PathLike, seed: int = 42, force: bool = False) -> dict[str, Path]:
    """`smmile data demo`: `write_demo` into an allowed folder, checked whole before anything is written."""
    _adopt_unmarked_demo(Path(out))
    root = fsguard.check_output_dir(out, DEMO_OWNER, force)
    for name in ("smmile", "plusplus"):
        check_dataset_dir(root / name)
    fsguard.prepare_output_dir(root, DEMO_OWNER, force)
    return write_demo(root, seed=seed)


def _adopt_unmarked_demo(root: Path) -> None:
    """Mark a demo folder written before output folders were marked (both datasets carry this generator's
    `smmile_demo.json`) as an earlier `smmile data demo` would have, so that a rerun may replace it."""
    if fsguard.read_marker(root) is not None:
        return
    datasets = [root / name for name in ("smmile", "plusplus")]
    if any((fsguard.read_json(folder / DEMO_INFO) or {}).get("generator") != DEMO_OWNER for folder in datasets):
        return
    for folder in datasets:
        if fsguard.read_marker(folder) is None:
            files = sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())
            fsguard.write_marker(folder, DATASET_OWNER, stamp=False, files=files)
    fsguard.write_marker(root, DEMO_OWNER)


def demo_root() -> Path:
    """Where `--dataset demo` reads the demo (generated on first use by `demo_path`)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "smmile" / f"demo-v{DEMO_VERSION}"
    return Path(os.environ.get("SMMILE_DEMO_DIR", default))


def demo_path(name: str = "smmile") -> Path:
    root = demo_root()
    if not (root / name / "data").is_dir():
        make_demo(root)
    return root / name
