"""Input conditions of the ICL diagnostics (docs/analyses.md §5): what the model sees in place of an image.

* ``no-example-images`` / ``no-query-image``: the images deleted (``fill`` none: an empty cell marked ``DROPPED``),
  or replaced by a blank (mid grey) or a seeded noise image of the same size (``fill`` blank | noise);
* ``swap-example-images``: each problem's example images taken from another problem's examples;
* ``other-query-image``: the query image of another problem.

The other problem is given by a seeded cycle over the problems (no problem keeps its own). Questions are kept as
written; a row whose question refers to an image that it no longer shows is marked ``image_referenced`` = "true"."""

from __future__ import annotations

import io
import random
import re
from dataclasses import replace

from ..protocol.problem import ImageRef, Problem, Row
from .label_variants import _derangement
from .schema import DROPPED

IMAGE_VARIANTS = ("no-example-images", "no-query-image", "swap-example-images", "other-query-image")
FILLS = ("none", "blank", "noise")
REFERENCED = "image_referenced"
_REFERS = re.compile(r"\b(this|these|the|above|following|shown|attached)\s+(\w+\s+)?(image|images|picture|photo|"
                     r"photograph|radiograph|x-ray|scan|slide|figure|film|ecg|tracing|fundus)\b", re.I)


def _fill_image(image: ImageRef | None, fill: str, rng: random.Random) -> ImageRef | None:
    """A blank or seeded noise PNG of ``image``'s size (256 x 256 without one); None for ``none``."""
    if fill == "none":
        return None
    import numpy as np
    from PIL import Image

    w, h = image.size if image is not None else (256, 256)
    if fill == "blank":
        pixels = np.full((h, w, 3), 128, dtype=np.uint8)
    else:
        pixels = np.random.default_rng(rng.getrandbits(64)).integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format="PNG")
    return ImageRef(buf.getvalue(), name=f"{fill}.png")


def _shown(row: Row, image: ImageRef | None, dropped: bool) -> Row:
    fields = {**row.fields, **({DROPPED: "true"} if dropped else {})}
    if _REFERS.search(row.question or ""):  # kept as written: it may refer to an image no longer shown
        fields[REFERENCED] = "true"
    return replace(row, image=image, fields=fields)


def reimage(kind: str, problems: list[Problem], seed: int, fill: str = "none") -> tuple[list[Problem], list[dict]]:
    ids = [p.problem_id for p in problems]
    other = _derangement(ids, random.Random(f"{seed}:{kind}"))
    by_id = {p.problem_id: p for p in problems}
    out, notes = [], []
    for p in problems:
        rng, last = random.Random(f"{seed}:{kind}:{p.problem_id}"), len(p.rows) - 1
        targets = range(last) if kind in ("no-example-images", "swap-example-images") else (last,)
        donor = by_id.get(other.get(p.problem_id, ""))
        rows = list(p.rows)
        for i in targets:
            if kind == "swap-example-images":
                donors = donor.examples if donor else ()
                image = donors[i % len(donors)].image if donors else p.rows[i].image
            elif kind == "other-query-image":
                image = donor.query.image if donor else p.rows[i].image
            else:
                image = _fill_image(p.rows[i].image, fill, rng)
            rows[i] = _shown(p.rows[i], image, kind in ("no-example-images", "no-query-image") and fill == "none")
        out.append(Problem(p.problem_id, tuple(rows)))
        notes.append({"problem_id": p.problem_id, "n_examples": len(p.examples), "rows": list(targets),
                      "had_image": [p.rows[i].image is not None for i in targets],
                      "from_problem_id": donor.problem_id if donor and kind in ("swap-example-images",
                                                                              "other-query-image") else None,
                      "image_referenced": [i for i in targets if REFERENCED in rows[i].fields]})
    return out, notes
