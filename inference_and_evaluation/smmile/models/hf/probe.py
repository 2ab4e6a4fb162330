"""What a generic checkpoint accepts, probed before the first problem, and the layout the run uses.

Checks (recorded in the manifest): the chat template renders a system turn (``system_role``) and an assistant turn
between two user turns (``assistant_role``); every image of the probe problem (the run's one with the most images)
reaches the model as ICL turns (``images_in_earlier_turns``) and folded into one user turn
(``several_images_in_one_turn``): inverting the first, and separately the last, image changes the next-token scores
(a processor that silently keeps one image fails); the query alone reaches it (``one_image``).
Fallbacks (``Layout``): no system role -> "<system>\n\n<text>" opens the first user turn; no images in earlier
turns (or no assistant role) -> the examples folded into one user turn ("<question>\nAnswer: <answer>", ...);
neither -> ICL stops with one line, 0-shot runs. Out of memory while probing: unknown, counted as passed.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from ...errors import UserError

log = logging.getLogger(__name__)

Render = Callable[[list[dict]], str]  # messages -> prompt text (raises if the template refuses them)
Score = Callable[[list[dict], list], Any]  # (messages, images) -> next-token scores (array or {token: logprob})

PROBE_SYSTEM, PROBE_USER, PROBE_ANSWER = "Probe system text.", "Probe question text.", "Probe answer text."
TOLERANCE = 1e-4  # an image that does not reach the model leaves the scores bit-identical


@dataclass(frozen=True)
class Check:
    ok: bool | None  # None: unknown (out of memory while probing), counted as passed
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.ok is not False


@dataclass(frozen=True)
class Layout:
    system: str = "system-turn"  # or "first-user-turn"
    examples: str = "turns"  # or "one-turn"

    def apply(self, messages: list[dict]) -> list[dict]:
        if self.system == "first-user-turn":
            messages = fold_system(messages)
        return fold_examples(messages) if self.examples == "one-turn" else messages


@dataclass
class Probe:
    checks: dict[str, Check] = field(default_factory=dict)
    probe_problem: str = ""
    probe_images: int = 0

    def layout(self, mode: str) -> Layout | None:
        """The layout of a run in `mode`; None: ICL is impossible (one image per prompt)."""
        system = "system-turn" if self.checks["system_role"].passed else "first-user-turn"
        if mode != "ICL" or self.probe_images < 2 or self.checks["images_in_earlier_turns"].passed:
            return Layout(system, "turns")
        if self.checks["several_images_in_one_turn"].passed:
            return Layout(system, "one-turn")
        return None

    def refusal(self, model: str) -> str:
        """The one-line error of an ICL run on a checkpoint that takes one image per prompt."""
        why = self.checks["several_images_in_one_turn"].detail or self.checks["images_in_earlier_turns"].detail
        return (f"{model} takes one image per prompt ({why}); ICL needs up to {self.probe_images} images per "
                f"prompt: run it with --inference_mode 0-shot")

    def run_layout(self, mode: str, model: str) -> Layout:
        """The layout of a run in `mode`; ICL on a checkpoint that takes one image per prompt stops here with
        `refusal()` as its one line. A query image that does not reach the model: a warning, the run goes on."""
        layout = self.layout(mode)
        if layout is None:
            raise UserError(self.refusal(model))
        if self.checks["one_image"].ok is False:
            log.warning(f"[smmile] warning: the query image does not reach the model "
                        f"({self.checks['one_image'].detail}); its answers come from the text alone")
        return layout

    def as_dict(self, mode: str) -> dict:
        layout = self.layout(mode)
        return {"checks": {k: asdict(v) for k, v in self.checks.items()}, "probe_problem": self.probe_problem,
                "probe_images": self.probe_images, "layout": asdict(layout) if layout else None,
                "max_images_per_prompt": self.max_images()}

    def max_images(self) -> int:
        several = any(self.checks[k].ok for k in ("images_in_earlier_turns", "several_images_in_one_turn"))
        return self.probe_images if several else 1


def first_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(part_text: str) -> dict:
    return {"type": "text", "text": part_text}


def fold_system(messages: list[dict]) -> list[dict]:
    """The system prompt moved to the start of the first user turn's first text."""
    if not messages or messages[0]["role"] != "system":
        return messages
    system = " ".join(p["text"] for p in messages[0]["content"] if p.get("type") == "text")
    out, done = [], False
    for m in messages[1:]:
        if not done and m["role"] == "user":
            content = list(m["content"])
            k = next((i for i, p in enumerate(content) if p.get("type") == "text"), None)
            if k is None:
                content.append(_text(system))
            else:
                content[k] = _text(f"{system}\n\n{content[k]['text']}")
            m, done = {**m, "content": content}, True
        out.append(m)
    return out


def fold_examples(messages: list[dict]) -> list[dict]:
    """Every turn after the system turn in one user turn; an answer becomes the text "Answer: <answer>"."""
    head = [m for m in messages[:1] if m["role"] == "system"]
    parts: list[dict] = []
    for m in messages[len(head):]:
        new = list(m["content"]) if m["role"] == "user" else [_text("Answer: " + "".join(
            p["text"] for p in m["content"] if p.get("type") == "text"))]
        for p in new:
            if p.get("type") == "text" and parts and parts[-1].get("type") == "text":
                parts[-1] = _text(parts[-1]["text"] + "\n" + p["text"])
            else:
                parts.append(p)
    return head + [{"role": "user", "content": parts}]


def _renders(render: Render, messages: list[dict], *needles: str) -> Check:
    try:
        text = render(messages)
    except Exception as exc:  # noqa: BLE001 - a template error is the answer to the question asked
        return Check(False, f"chat template: {first_line(exc)}")
    missing = [n for n in needles if n not in text]
    return Check(False, f"chat template renders no {missing[0]!r}") if missing else Check(True)


def differs(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() != b.keys() or any(abs(a[k] - b[k]) > TOLERANCE for k in a)
    return float(abs(a - b).max()) > TOLERANCE


def inverted(img):
    from PIL import ImageOps

    return ImageOps.invert(img.convert("RGB"))


def _reaches(score: Score, messages: list[dict], images: list, is_oom: Callable[[BaseException], bool]) -> Check:
    """Every image reaches the model: inverting the first (and, separately, the last) changes the scores."""
    try:
        base = score(messages, images)
        for k in sorted({0, len(images) - 1}):
            changed = [inverted(img) if i == k else img for i, img in enumerate(images)]
            if not differs(base, score(messages, changed)):
                return Check(False, f"image {k + 1} of {len(images)} does not reach the model")
    except Exception as exc:  # noqa: BLE001
        if is_oom(exc):
            return Check(None, "out of memory while probing")
        return Check(False, first_line(exc))
    return Check(True)


def run_probe(render: Render, score: Score, problem_id: str, icl: tuple[list[dict], list],
              query: tuple[list[dict], list], is_oom: Callable[[BaseException], bool] = lambda e: False,
              skip_several: str = "") -> Probe:
    """Probe with the canonical ICL conversation `icl` and the query-only conversation `query` of one problem
    ((messages, prepared images) each); `skip_several` (why) leaves the two several-image checks unknown."""
    system = _renders(render, [{"role": "system", "content": [_text(PROBE_SYSTEM)]},
                               {"role": "user", "content": [_text(PROBE_USER)]}], PROBE_SYSTEM, PROBE_USER)
    assistant = _renders(render, [{"role": "user", "content": [_text(PROBE_USER)]},
                                  {"role": "assistant", "content": [_text(PROBE_ANSWER)]},
                                  {"role": "user", "content": [_text(PROBE_USER)]}], PROBE_ANSWER)
    base = Layout("system-turn" if system.passed else "first-user-turn", "turns")
    messages, images = icl
    checks = {"system_role": system, "assistant_role": assistant}
    if len(images) < 2 or skip_several:
        checks["images_in_earlier_turns"] = checks["several_images_in_one_turn"] = Check(
            None, skip_several or "not probed: the problem has one image")
    else:
        checks["images_in_earlier_turns"] = (_reaches(score, base.apply(messages), images, is_oom) if assistant.passed
                                             else Check(False, "no assistant role"))
        checks["several_images_in_one_turn"] = _reaches(score, Layout(base.system, "one-turn").apply(messages),
                                                        images, is_oom)
    checks["one_image"] = _reaches(score, base.apply(query[0]), query[1], is_oom)
    return Probe(checks, problem_id, len(images))


# -- what the processor says about image size and count (recorded in the manifest) ---------------------------------
LIMIT_ATTRS = ("size", "crop_size", "max_image_size", "min_pixels", "max_pixels", "max_image_tiles", "min_patches",
               "max_patches", "do_image_splitting", "patch_size", "image_seq_length", "image_seq_len",
               "num_image_tokens", "num_query_tokens")


def _jsonable(value):
    import dataclasses

    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _jsonable(v) for k, v in dict(value.items()).items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def image_limits(processor) -> dict:
    out = {}
    for owner_name, owner in (("image_processor", getattr(processor, "image_processor", None)),
                              ("processor", processor)):
        for attr in LIMIT_ATTRS:
            value = getattr(owner, attr, None) if owner is not None else None
            if value is not None and not callable(value):
                out[f"{owner_name}.{attr}"] = _jsonable(value)
    return out


def template_and_limits(processor, model: str) -> tuple[str, dict]:
    """The chat template a generic run renders with, and the manifest's record of where it came from and of the
    processor's image limits; a checkpoint without a chat template is refused with one line."""
    template, source = chat_template(processor)
    if template is None:
        raise UserError(f"{model} has no chat template (neither its processor nor its tokenizer has one); "
                        "--model hf:/vllm: runs chat checkpoints only")
    return template, {"chat_template": source, "image_limits": image_limits(processor)}


def chat_template(processor) -> tuple[str | None, str]:
    """(template, where it came from): the processor's, else its tokenizer's ("default" of a named set)."""
    for source, owner in (("processor", processor), ("tokenizer", getattr(processor, "tokenizer", None))):
        template = getattr(owner, "chat_template", None)
        if isinstance(template, dict):
            template = template.get("default")
        if template:
            return template, source
    return None, "none"
