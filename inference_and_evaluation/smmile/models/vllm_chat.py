"""vLLM backend of `--model vllm:<id>`: any checkpoint through `LLM.chat`, one call for the run: the generic
family's conversations in the probed layout (`hf/probe.py`), with the chat template the HF path uses.
`limit_mm_per_prompt` is the run's largest image count, so a 0-shot run leaves the several-image checks unknown.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from ..errors import UserError
from .hf.encode import with_images
from .hf.generic import probe_inputs
from .hf.probe import first_line, run_probe, template_and_limits
from .vllm_backend import VLLMBackend

PROBE_LOGPROBS = 20


class VLLMChatBackend(VLLMBackend):
    name = "vllm-chat"

    def generate(self, work: list[tuple[Any, Any]], on_done) -> None:
        if not work:
            return
        vllm = self._vllm()
        processor = self.load_processor()
        template, record = template_and_limits(processor, self.path)
        self.info.update(record)
        n_images = max(len(req.images) for _, req in work)
        engine = {**self.engine_kwargs(n_images), **self.image_backend_kwargs(processor)}
        try:
            self.llm = self.llm or self._engine(vllm, engine)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - vLLM refuses the model or the image count: one line
            hint = "; a model that takes one image per prompt runs with --inference_mode 0-shot" if n_images > 1 else ""
            raise UserError(f"vLLM cannot start {self.path} for {n_images} image(s) per prompt: "
                            f"{first_line(exc)}{hint}") from None
        layout = self.prepare(work, processor, template, vllm, n_images)
        params = self.sampling(work[0][1].gen)
        conversations = [with_images(layout.apply(req.messages), req.load_images(), "image_pil") for _, req in work]
        self.calls.append({"engine": {k: v for k, v in engine.items() if k != "model"}, "sampling": params,
                           "prompts": len(conversations), "api": "LLM.chat"})
        self.deliver(work, on_done, time.time(), lambda: self.llm.chat(
            conversations, vllm.SamplingParams(**params), chat_template=template, add_generation_prompt=True,
            use_tqdm=False), extra={"layout": asdict(layout)})

    def prepare(self, work, processor, template: str, vllm, n_images: int):
        """The capability probe on the run's problem with the most images; the layout, or one line for ICL."""
        mode = work[0][0].mode
        problem_id, icl, query = probe_inputs(work)

        def render(messages):
            return processor.apply_chat_template(messages, chat_template=template, tokenize=False,
                                                 add_generation_prompt=True)

        def score(messages, images):
            params = vllm.SamplingParams(max_tokens=1, temperature=0.0, logprobs=PROBE_LOGPROBS)
            out = self.llm.chat([with_images(messages, images, "image_pil")], params, chat_template=template,
                                add_generation_prompt=True, use_tqdm=False)[0]
            return {tok: lp.logprob for tok, lp in out.outputs[0].logprobs[0].items()}

        skip = "" if n_images >= len(icl[1]) else f"not probed: vLLM runs with {n_images} image(s) per prompt"
        probe = run_probe(render, score, problem_id, icl, query, skip_several=skip)
        self.info["capabilities"] = probe.as_dict(mode)
        return probe.run_layout(mode, self.preset.name if self.preset else self.path)
