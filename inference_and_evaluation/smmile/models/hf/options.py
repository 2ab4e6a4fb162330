"""`smmile run --score-options` (MCQA, transformers backends): each option letter scored by the model's
log-probability as the next token after the prompt the family renders, followed by the answer tag `<answer>` where
the prompt asks for one (the model is not asked to reason first). One forward pass on the inputs generation would
get; the log-probabilities, and the probabilities renormalised over the options, are journaled with the response
(`extra.option_logprobs`, `extra.option_probs`); the answer is the most probable letter (the first on a tie),
written as `<answer>X</answer>` so that every family's rows derive it as they derive a generated answer."""

from __future__ import annotations

from ..base import Response

TAG = "<answer>"
SEQUENCE_KEYS = ("attention_mask", "token_type_ids", "mm_token_type_ids", "cross_attention_mask")


def prefix_of(items) -> str:
    """`<answer>` when the prompts ask for the answer inside that tag, else "" (one batch: one template)."""
    found = {TAG if TAG in item.target else "" for item in items}
    if len(found) != 1:
        raise ValueError("one batch mixes prompts with and without an <answer> tag")
    return found.pop()


def letter_ids(tok, prefix: str, letters) -> dict[str, int]:
    """The token of each letter as it follows `prefix` (a newline where there is none); one token each, distinct."""
    context = prefix or "\n"
    head = tok.encode(context, add_special_tokens=False)
    ids = {}
    for letter in letters:
        full = tok.encode(context + letter, add_special_tokens=False)
        if full[:len(head)] != head or len(full) != len(head) + 1:
            raise ValueError(f"option letter {letter!r} is not one token after {context!r} for this tokenizer")
        ids[letter] = full[-1]
    if len(set(ids.values())) != len(ids):
        raise ValueError("two option letters are the same token for this tokenizer")
    return ids


def extend(inputs: dict, ids: list[int]) -> dict:
    """`inputs` with the tokens `ids` appended to every row (left padded: every row ends at the last column)."""
    import torch

    rows, width = inputs["input_ids"].shape
    out = {}
    for key, value in inputs.items():
        if key == "input_ids":
            value = torch.cat([value, value.new_tensor([ids] * rows)], 1)
        elif getattr(value, "dim", lambda: 0)() >= 2 and tuple(value.shape[:2]) == (rows, width):
            if key not in SEQUENCE_KEYS:
                raise ValueError(f"cannot append the answer tag: the inputs' {key} follows the tokens")
            value = torch.cat([value] + [value[:, -1:]] * len(ids), 1)
        out[key] = value
    return out


def score(model, tok, inputs: dict, items) -> list[Response]:
    """One response per item: the option letters' log-probabilities and probabilities, the argmax as the answer."""
    import torch

    prefix = prefix_of(items)
    if prefix:
        inputs = extend(inputs, tok.encode(prefix, add_special_tokens=False))
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=1, do_sample=False, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=pad)
    logprobs = torch.log_softmax(out.logits[0].float(), dim=-1).cpu()
    responses = []
    for i, item in enumerate(items):
        ids = letter_ids(tok, prefix, item.options)
        scored = {letter: float(logprobs[i, t]) for letter, t in ids.items()}
        probs = torch.softmax(torch.tensor(list(scored.values()), dtype=torch.float64), 0).tolist()
        option_probs = dict(zip(scored, probs))
        best = max(option_probs, key=option_probs.get)
        mask = inputs.get("attention_mask")
        n_prompt = int(mask[i].sum()) if mask is not None else int(inputs["input_ids"].shape[1])
        responses.append(Response(text=f"<answer>{best}</answer>", full_text=f"<answer>{best}</answer>",
                                  usage={"input_tokens": n_prompt},
                                  extra={"option_logprobs": scored, "option_probs": option_probs,
                                         "scored_after": prefix}))
    return responses
