"""The transformers backend of `--model hf:<id>`: any checkpoint, its own chat template, and the layout the probe
(`probe.py`) finds before the first problem (in the manifest as `backend.capabilities`)."""

from __future__ import annotations

from dataclasses import asdict

from ...errors import UserError
from .backend import HFBackend, is_oom, say
from .generic import probe_inputs
from .probe import run_probe, template_and_limits


def model_class_for(path: str, **hub):
    """`AutoModelForImageTextToText` when it knows the config's model type, else the config's `architectures` class."""
    import transformers
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(path, **hub)
    if type(config) in AutoModelForImageTextToText._model_mapping:
        return AutoModelForImageTextToText
    for name in getattr(config, "architectures", None) or ():
        if hasattr(transformers, name):
            return getattr(transformers, name)
    raise UserError(f"transformers {transformers.__version__} has no image-text-to-text class for {path} "
                    f"(model type {config.model_type!r}, architectures {config.architectures})")


class GenericHFBackend(HFBackend):
    name = "hf-generic"

    def __init__(self, preset=None, spec=None, settings=None, generation=None):
        super().__init__(preset, spec, settings, generation)
        self.template: str | None = None
        self.layout = None
        self.info.update(chat_template=None, capabilities=None, image_limits=None)

    def model_class(self, **hub):
        """The chat template is checked here, before any weight is read; then the class that loads the weights."""
        self.template, record = template_and_limits(self.processor, str(self.path))
        self.info.update(record)
        return model_class_for(self.path, **hub)

    def generate(self, work, on_done) -> None:
        if not work:
            return
        self.load()
        if self.layout is None:
            self.prepare(work)
        super().generate(work, on_done)

    def prepare(self, work) -> None:
        """Probe on the run's problem with the most images; ICL that needs several images per prompt and cannot
        have them stops here with one line."""
        mode = work[0][0].mode
        problem_id, icl, query = probe_inputs(work)
        probe = run_probe(self.render, self.score, problem_id, icl, query, is_oom)
        self.info["capabilities"] = probe.as_dict(mode)
        self.layout = probe.run_layout(mode, self.preset.name if self.preset else str(self.path))
        conv = icl if mode == "ICL" else query
        tokens = int(self.inputs([self.layout.apply(conv[0])], [conv[1]])["input_ids"].shape[1])
        config = getattr(self.model.config, "text_config", None) or self.model.config
        context = getattr(config, "max_position_embeddings", None)
        self.info["capabilities"].update(probe_prompt_tokens=tokens, context_length=context)
        if context and tokens > context:
            say(f"warning: the probe problem's prompt is {tokens} tokens, longer than the model's context ({context})")

    def render(self, messages: list[dict]) -> str:
        return self.processor.apply_chat_template(messages, chat_template=self.template, tokenize=False,
                                                  add_generation_prompt=True)

    def inputs(self, conversations: list[list[dict]], images: list[list]) -> dict:
        """Processor inputs of a batch; the tokenizer adds BOS only where the template did not."""
        texts = [self.render(m) for m in conversations]
        tok = self.processor.tokenizer
        tok.padding_side = "left"
        kwargs = {"padding": True, "return_tensors": "pt"}
        bos = getattr(tok, "bos_token", None)
        if bos and all(t.startswith(bos) for t in texts):
            kwargs["add_special_tokens"] = False
        if any(images):
            kwargs["images"] = images
        return self.processor(text=texts, **kwargs)

    def encode(self, reqs) -> dict:
        return self._to_device(self.inputs([self.layout.apply(r.messages) for r in reqs],
                                           [r.load_images() for r in reqs]))

    def decode(self, inputs: dict, out, reqs) -> list:
        return self._with_layout(super().decode(inputs, out, reqs))

    def _score(self, inputs: dict, batch: list) -> list:
        return self._with_layout(super()._score(inputs, batch))

    def _with_layout(self, responses: list) -> list:
        for response in responses:  # journaled with the answer: which layout produced it
            response.extra["layout"] = asdict(self.layout)
        return responses

    def score(self, messages: list[dict], images: list):
        """Next-token logits of one conversation (the probe's measure of whether an image reaches the model)."""
        import torch

        inputs = self._to_device(self.inputs([messages], [images]))
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=1, do_sample=False, output_logits=True,
                                      return_dict_in_generate=True)
        return out.logits[0][0].float().cpu()
