"""What a model family and a backend must provide to the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..generation import GenerationSettings, RunSettings
from ..protocol.items import Item, Rngs
from ..protocol.options import options_text, shuffled_options
from ..protocol.outputs import OutputSpec, derive_row, failed_row, output_spec
from ..protocol.templates import MCQA_TEMPLATES, mcqa_prompt


@dataclass
class Response:
    """What a backend returns for one item. `error` set means the problem failed (never an answer)."""

    text: str = ""  # generated text (new tokens / API reply)
    full_text: str | None = None  # whole decoded sequence, prompt included (HF families that stored it)
    error: str | None = None  # faithful error text, e.g. "CUDA OOM", "Generation failed - ..."
    usage: dict = field(default_factory=dict)  # input_tokens, output_tokens
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


OnDone = Callable[[Item, Response], None]


def resolve_settings(preset, spec, family_default: GenerationSettings | None = None
                     ) -> tuple[RunSettings, GenerationSettings]:
    """(loading/transport settings, generation settings), resolved in this one place: the flags' (`spec`) over
    the preset's over the family's faithful generation default."""
    settings, generation = RunSettings(), family_default or GenerationSettings()
    for layer in (preset, spec):
        if layer is not None:
            settings, generation = layer.settings.over(settings), layer.generation.over(generation)
    return settings, generation


class Backend:
    """Runs requests. `generate` must call `on_done` once per item, as each completes. `settings` and `generation`
    come resolved from the runner; a backend built on its own (tests, tools) resolves them the same way. The
    optional hooks are declared here, doing nothing."""

    name = "backend"
    info: dict | None = None  # what `describe` records, for a backend that completes it as it runs
    RUN_ONLY: tuple[str, ...] = ()  # settings that change how requests are sent, not what: not in the journal key
    SCORES_OPTIONS = False  # `--score-options`: can score MCQA option letters instead of generating
    progress_detail: Callable[[], str] | None = None  # what the progress line shows besides the counts

    def __init__(self, preset=None, spec=None, settings: RunSettings | None = None,
                 generation: GenerationSettings | None = None):
        self.preset, self.spec = preset, spec
        if settings is None or generation is None:
            resolved, resolved_gen = resolve_settings(preset, spec)
            settings = resolved if settings is None else settings
            generation = resolved_gen if generation is None else generation
        self.settings, self.generation = settings, generation

    def generate(self, work: list[tuple[Item, Any]], on_done: OnDone) -> None:
        raise NotImplementedError

    def count_journaled(self, records: list[dict]) -> None:
        """Called by the executor, before `generate`, with every record of the output's journal."""

    def bind_journal(self, journal, keys: dict[int, str]) -> None:
        """Called by the executor, before `generate`: its journal and each work item's key (by id(item))."""

    def describe(self) -> dict:
        """Settings recorded in the manifest (never secrets)."""
        return {"backend": self.name} if self.info is None else self.info

    def close(self) -> None:
        pass


class Family:
    """How one original script prompts its model; its rows come from its output spec (`protocol.outputs`)."""

    name = "family"
    SETTINGS: tuple[str, ...] = ()  # the `RunSettings` fields (and "protocol") its constructor takes
    output_key = "api"  # the original script whose output spec derives the rows
    protocol = "paper"
    mcqa_template = "A"  # key of MCQA_TEMPLATES
    GENERATION = GenerationSettings()  # the original script's generation arguments (None: not passed)
    _generation: GenerationSettings | None = None

    @property
    def generation(self) -> GenerationSettings:
        """The run's resolved settings (set by the runner); the family's faithful default until then."""
        return self._generation or type(self).GENERATION

    @generation.setter
    def generation(self, value: GenerationSettings) -> None:
        self._generation = value

    @property
    def output(self) -> OutputSpec:
        return output_spec(self.output_key, self.protocol)

    def plan(self, item: Item, rngs: Rngs) -> None:
        """Fill options/correct/target in problem order (draws from the seeded streams)."""
        if item.fmt == "mcqa":
            item.options, item.correct = shuffled_options(item.problem, rngs.py)
            item.target = mcqa_prompt(MCQA_TEMPLATES[self.mcqa_template], item.problem.query.question,
                                      options_text(item.options))
        else:
            item.target = item.problem.query.question

    def request(self, item: Item) -> Any:
        raise NotImplementedError

    def row(self, item: Item, response: Response) -> dict:
        return derive_row(self.output, item, response)

    def error_row(self, item: Item, response: Response) -> dict:
        return failed_row(self.output, item, response)

    def columns(self, fmt: str) -> list[str]:
        return list(self.output.columns(fmt))
