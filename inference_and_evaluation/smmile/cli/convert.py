"""`smmile convert llava-med SRC DST`: checkpoints converted to the format smmile loads."""

from __future__ import annotations

from pathlib import Path

from ..models.hf.convert_llavamed import build
from . import common as fd


def main(argv: list[str] | None = None) -> int:
    p = fd.parser("Convert checkpoints to the format smmile loads.")
    sub = p.add_subparsers(dest="what", required=True)
    lm = sub.add_parser("llava-med", formatter_class=fd.HelpFormatter,
                        help="LLaVA-Med v1.5 (original LLaVA layout) -> transformers Llava folder")
    lm.add_argument("src", help="folder of the original checkpoint (config.json, weights, tokenizer)")
    lm.add_argument("dst", help="output folder (pass it to inference_llavamed*.py --model-path)")
    lm.add_argument("--vision-tower", default=None, help="CLIP vision tower folder or hub id "
                    "(default: the source config's mm_vision_tower)")

    def go() -> int:
        a = p.parse_args(argv)
        src = Path(a.src)
        out = build(src, Path(a.dst), a.vision_tower)
        print(f"Converted {src} -> {out}")
        return 0

    return fd.guarded(go)
