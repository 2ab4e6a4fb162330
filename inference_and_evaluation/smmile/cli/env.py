"""`smmile env`: the installed versions that can change results, beside the paper's pins."""

from __future__ import annotations

import json

from .. import environment as env
from . import common as fd

def image_backends() -> list[tuple[str, str, str]]:
    """(family, under paper, under corrected) for the transformers families of the presets."""
    from ..models import registry
    from ..models.hf.processor import requested_image_backend

    families = sorted({p.family.rpartition(":")[2] for p in (registry.get(n) for n in registry.names())
                       if p.backend.startswith("hf.")})
    auto = "torchvision" if env.torchvision_usable() else "pil (no usable torchvision)"
    paper, corrected = (requested_image_backend(None, protocol) for protocol in ("paper", "corrected"))
    return [(family, auto if paper == "auto" else paper, auto if corrected == "auto" else corrected)
            for family in families]


def facts() -> dict:
    pins = {p.package: p for p in env.PAPER_PINS}
    rows = []
    for name in dict.fromkeys(["python", *env.PACKAGES, *pins]):
        installed, pin = env.version(name), pins.get(name)
        differs = pin is not None and pin.paper != "any" and (installed is None
                                                              or not env.same_release(installed, pin.paper))
        rows.append({"package": name, "installed": installed, "paper": pin.paper if pin else None,
                     "differs": differs,  # a pin of "any" (flash-attn) says what happens either way
                     "under_protocol_paper": pin.under_paper if pin and (differs or pin.paper == "any") else None})
    return {"packages": rows, "accelerator": env.accelerator(), "attention": env.attention_in_use(),
            "image_backend": [{"family": f, "paper": a, "corrected": b} for f, a, b in image_backends()]}


def render(data: dict) -> str:
    lines = [f"{'package':<15} {'installed':<20} {'paper':<10}  under --protocol paper"]
    for row in data["packages"]:
        mark = "!" if row["differs"] else " "
        note = row["under_protocol_paper"] or ("same as the paper" if row["paper"] and not row["differs"] else "")
        lines.append(f"{row['package']:<15} {row['installed'] or '-':<20} {row['paper'] or '-':<10}{mark} {note}")
    acc = data["accelerator"]
    if not acc:
        lines.append("\naccelerator: torch is not installed")
    else:
        gpus = ", ".join(acc["gpus"]) or "none visible"
        lines.append(f"\naccelerator: torch CUDA build {acc['torch_cuda'] or 'none (CPU build)'}; GPUs: {gpus}")
    lines.append(f"attention of the presets that asked for flash_attention_2 (Qwen2.5-VL, MedVLM-R1): "
                 f"{data['attention']}")
    lines.append("\nimage-processor backend per family (--image-backend overrides):")
    lines.append(f"  {'family':<22} {'--protocol paper':<18} --protocol corrected")
    lines += [f"  {r['family']:<22} {r['paper']:<18} {r['corrected']}" for r in data["image_backend"]]
    lines.append("\n! = differs from the paper's pin. Every run records these versions in its manifest "
                 "(<result>.manifest.json, \"packages\").")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = fd.parser("Show the installed versions of everything that can change results (the same facts every run "
                  "manifest records), the accelerator, and the image-processor backend each model family will use, "
                  "beside the versions the paper pinned; for each difference, what --protocol paper does about it. "
                  "requirements-paper.lock installs the paper's versions on a GPU machine.")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")

    def go() -> int:
        args = p.parse_args(argv)
        data = facts()
        print(json.dumps(data, indent=2) if args.json else render(data))
        return 0

    return fd.guarded(go)
