"""How a word2vec run reports its progress: a tqdm bar on a terminal, ``logging`` elsewhere.

gensim reports through ``logging`` (``EPOCH 1 - PROGRESS: at 40.00% examples, 512345 words/s``),
so a script whose standard error goes to a file or a pipe gets lines, not a bar redrawn with
carriage returns. bigvocab does the same when standard error is not a terminal, and draws a tqdm
bar (words/s and the ETA) when it is; ``enabled=False`` silences both.
"""

from __future__ import annotations

import logging
import sys
import time
from types import TracebackType
from typing import TypeAlias

from tqdm import tqdm

logger = logging.getLogger("bigvocab.word2vec")

#: Seconds between two progress lines (gensim's ``report_delay``).
REPORT_DELAY = 1.0


class LoggedProgress:
    """tqdm's ``update`` / ``set_description`` interface, written as ``logging`` INFO lines at
    most every ``delay`` seconds, and one line when the bar closes."""

    def __init__(self, total: int, desc: str, initial: int = 0, delay: float = REPORT_DELAY) -> None:
        self.total, self.desc, self.delay = total, desc, delay
        self.n = self._since = initial
        self._started = self._last = time.perf_counter()

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def update(self, words: int) -> None:
        self.n += words
        now = time.perf_counter()
        if now - self._last >= self.delay:
            self._report(now, "PROGRESS: at")
            self._last = now

    def _report(self, now: float, what: str) -> None:
        rate = (self.n - self._since) / max(now - self._started, 1e-9)
        share = 100.0 * self.n / max(self.total, 1)
        logger.info("%s - %s %.2f%% of %d words, %.0f words/s", self.desc, what, share, self.total, rate)

    def __enter__(self) -> LoggedProgress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self._report(time.perf_counter(), "done:")


Progress: TypeAlias = tqdm | LoggedProgress


def progress_bar(total_words: int, enabled: bool, desc: str = "word2vec", initial: int = 0) -> Progress:
    """Progress counted in words: a tqdm bar when standard error is a terminal, ``logging`` lines
    otherwise, nothing when not ``enabled``."""
    if enabled and not sys.stderr.isatty():
        return LoggedProgress(total_words, desc, initial)
    return tqdm(
        total=total_words,
        initial=initial,
        unit="word",
        unit_scale=True,
        desc=desc,
        disable=not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.5,
        leave=False,
    )
