"""Any vision-language checkpoint with zero code: `--model hf:<hub id or local path>` / `--model vllm:<...>`.

The canonical conversation with the API chat scripts' system prompt, ICL examples as user (image, question) and
assistant (answer) turns, typed content parts for every role; Template A + E2 as served models
(`registry.served_model`); greedy, at most 512 new tokens; images RGB, transparency on white. The layout comes
from the capability probe (`probe.py`); names from the model id or folder name (`identity_for_model_id`).
"""

from __future__ import annotations

from ...generation import MAX_NEW_TOKENS, GenerationSettings
from ...protocol.conversation import MessageStyle, build_conversation, render_messages, user_images
from ...protocol.items import Item
from ...protocol.problem import Problem
from ...protocol.templates import API_SYSTEM
from ..base import Family
from .families import hf_generate_kwargs
from .imageprep import on_white
from .request import HFRequest

STYLE = MessageStyle(system=API_SYSTEM, system_as_parts=True, image_first=True, answer_as_parts=True)
RENDER = "generic"  # HFRequest.render of this family: the backend applies the probed layout, then the template


def rgb_on_white(_index: int, img):
    """An RGB image: transparent pixels composited on white, other modes converted (some processors need RGB)."""
    img = on_white(img)
    return img if img.mode == "RGB" else img.convert("RGB")


def conversation(problem: Problem, mode: str, target: str) -> tuple[list[dict], list]:
    turns = build_conversation(problem, mode, target)
    return render_messages(turns, STYLE), user_images(turns)


def probe_inputs(work) -> tuple[str, tuple[list[dict], list], tuple[list[dict], list]]:
    """(problem id, ICL conversation, query-only conversation) of the run's problem with the most images, each as
    (messages, prepared PIL images): what the capability probe renders."""
    problem = max((item.problem for item, _ in work), key=lambda p: len(p.rows))
    prep = work[0][1].prep or (lambda _i, img: img)
    convs = [conversation(problem, mode, problem.query.question) for mode in ("ICL", "0-shot")]
    icl, query = ((m, [prep(i, ref.load()) for i, ref in enumerate(refs)]) for m, refs in convs)
    return problem.problem_id, icl, query


class GenericFamily(Family):
    """The served-model family's prompt (Template A), as an HF/vLLM request; rows: output spec "generic"."""

    name = "generic-chat"
    output_key = "generic"
    SETTINGS = ("protocol",)
    GENERATION = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, do_sample=False)

    def __init__(self, protocol: str = "paper", **_):
        self.protocol = protocol

    def request(self, item: Item) -> HFRequest:
        messages, images = conversation(item.problem, item.mode, item.target)
        return HFRequest(RENDER, images, messages=messages, prep=rgb_on_white, gen=hf_generate_kwargs(self.generation),
                         errors=dict(self.output.errors))
