"""Spec §11.2: random.Random(42) + one shuffle per problem reproduces the published MCQA display orders."""

import random
import re

import pandas as pd
import pytest

from smmile.protocol.options import shuffled_options
from smmile.protocol.problem import Problem, Row

BLOCK = re.compile(r"Please select the best answer from the following options:\n(.*?)\n\nYour task", re.S)
LINE = re.compile(r"^([A-Z])\. (.*)$")


def displayed_options(full_response: str) -> list[tuple[str, str]]:
    """Option lines of the LAST prompt block (the query's) in display order."""
    block = BLOCK.findall(full_response)[-1]
    options, letter = [], None
    for line in block.split("\n"):
        m = LINE.match(line)
        if m and m.group(1) not in {l for l, _ in options}:
            options.append((m.group(1), m.group(2)))
        elif options:  # a multi-line answer continues the previous option
            options[-1] = (options[-1][0], options[-1][1] + "\n" + line)
    return options


@pytest.mark.parametrize("name", ["result_llava_7b_ICL_mcqa.csv", "result_llava_7b_0-shot_mcqa.csv",
                                  "result_llava_13b_ICL_mcqa.csv", "result_llama32_vision_90b_ICL_mcqa.csv"])
def test_display_order_reproduced(published, name):
    df = pd.read_csv(published / name, keep_default_na=False)
    rng = random.Random(42)
    for _, row in df.iterrows():
        shown = displayed_options(row["full_response"])
        by_letter = dict(sorted(shown))
        assert list(by_letter) == [chr(65 + i) for i in range(len(shown))]
        # rebuild the chunk's unique answers in letter order; the query answer is among them
        rows = tuple(Row(row["problem_id"], i, "q", a, None) for i, a in enumerate(by_letter.values()))
        rows += (Row(row["problem_id"], len(rows), "q", row["true_answer"], None),)
        options, correct = shuffled_options(Problem(row["problem_id"], rows), rng)
        assert [l for l, _ in shown] == list(options), row["problem_id"]
        assert correct == row["correct_option"]
