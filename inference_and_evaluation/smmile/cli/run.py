"""`smmile run`: run any preset on any dataset (the front doors map their original flags onto this)."""

from __future__ import annotations

from ..errors import UserError
from ..models import presets_api, registry
from ..runner.run import RunSpec, run
from . import api_models
from . import common as fd
from .api_models import add_api_flags, run_settings
from .local_models import add_engine_flags, add_local_model_flags, engine_fields, export_gpu_devices


def build_parser():
    p = fd.parser("Run a model preset on SMMILE / SMMILE++ / the demo data and write the original result CSV.",
                  epilog="Presets: " + ", ".join(registry.names()))
    p.add_argument("--model", required=True,
                   help="preset name (see the list below), or hf:<hub id or local path> / vllm:<hub id or "
                        "local path>: any vision-language checkpoint through its own chat template "
                        "(transformers / vLLM; capabilities probed first, recorded in the manifest)")
    p.add_argument("--inference_mode", "--inference-mode", dest="inference_mode", choices=["0-shot", "ICL"],
                   default="ICL", help=fd.MODE_HELP)
    p.add_argument("--task_format", "--task-format", dest="task_format", choices=["open", "mcqa"], default="open",
                   help=fd.FORMAT_HELP)
    fd.add_dataset_flag(p)
    p.add_argument("--output-dir", "--output_dir", dest="output_dir", default="../results", help=fd.OUTPUT_HELP)
    p.add_argument("--backend", default=None, help="override the preset's backend, as module:Class or a short name "
                   f"({', '.join(registry.BACKENDS)}); with openai-compatible, --model may name any model the server "
                   "at --base-url serves")
    p.add_argument("--no-open-suffix", action="store_true",
                   help="name open results result_<tag>_<mode>.csv, as the original open-only scripts did")
    fd.add_run_flags(p)
    g = p.add_argument_group("generation (unset: what the original script passed; recorded in the manifest)")
    g.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    g.add_argument("--top-p", type=float, default=None, help="nucleus sampling probability mass")
    g.add_argument("--top-k", type=int, default=None, help="top-k sampling (local models)")
    g.add_argument("--do-sample", type=_bool, default=None, metavar="true|false",
                   help="sample instead of greedy decoding (local models)")
    g.add_argument("--repetition-penalty", type=float, default=None, help="repetition penalty (local models)")
    g.add_argument("--seed", type=int, default=None, help="sampling seed sent to the backend")
    g.add_argument("--stop", action="append", default=None, metavar="TEXT",
                   help="stop generating at this text (repeatable)")
    g.add_argument("--score-options", action="store_true", default=None,
                   help="MCQA with a transformers model (hf:<id>, a local preset): score each option letter by the "
                        "model's probability after the prompt instead of generating; the answer is the most probable "
                        "letter, the probabilities are journaled (docs/analyses.md §5)")
    add_api_flags(p)
    add_local_model_flags(p)
    add_engine_flags(p)
    return p


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "yes", "1", "false", "no", "0"):
        raise ValueError(text)
    return text.lower() in ("true", "yes", "1")


def main(argv: list[str] | None = None) -> int:
    def go() -> int:
        args = build_parser().parse_args(argv)
        if args.backend and args.model.startswith(registry.MODEL_PREFIXES):
            raise UserError(f"--backend is not used with --model {args.model.split(':')[0]}:<id> "
                            "(the prefix names the backend: hf: transformers, vllm: vLLM)")
        settings = run_settings(args)
        export_gpu_devices(args)
        vllm = args.model.startswith("vllm:") or args.backend == "vllm"
        spec = fd.run_spec(args, args.model, args.task_format, args.dataset, open_suffix=not args.no_open_suffix,
                           backend=args.backend or _preset_backend(args.model), **engine_fields(args, settings, vllm))
        if args.score_options:
            _can_score_options(spec)
        if args.backend == "openai-compatible":
            registry.served_model(args.model)  # any model the server serves, tagged by its name
        return api_models.dry_run(spec) if args.dry_run else run(spec).exit_code

    return fd.guarded(go, interrupted=fd.INTERRUPTED_RUN)


def _can_score_options(spec: RunSpec) -> None:
    """--score-options: MCQA only, with a backend that can score options (the transformers backends)."""
    if spec.fmt != "mcqa":
        raise UserError("--score-options scores MCQA options: the open format has none (add --task_format mcqa)")
    path = registry.backend_path(spec.backend) or registry.get(spec.model).backend
    if not registry.backend_class(path).SCORES_OPTIONS:
        raise UserError(f"--score-options: the backend of {spec.model} ({path}) cannot score options; only the "
                        "transformers backend can (--model hf:<id or folder>, or a local preset with --backend hf)")


def _preset_backend(model: str) -> str | None:
    """`--model gpt-4o` without --backend picks Azure or OpenAI as inference_openai.py does."""
    preset = registry.PRESETS.get(model)
    if preset is not None and preset.backend == presets_api.BACKENDS["azure"]:
        return api_models.openai_provider()
    return None
