"""A progress bar on stderr (done/total, rate, ETA); silent when stderr is not a terminal."""

from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, done: int, desc: str):
        from tqdm import tqdm

        self.bar = tqdm(total=total, initial=done, desc=desc, unit="problem", file=sys.stderr,
                        disable=None, dynamic_ncols=True, smoothing=0.1)

    def update(self, failed: bool) -> None:
        self.bar.update(1)
        if failed:
            self.bar.set_postfix_str("failures so far", refresh=False)

    def close(self) -> None:
        self.bar.close()
