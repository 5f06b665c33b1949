"""Child-process entry of ``bench --distributed``: a JSON spec on stdin, one JSON line per rank
and row on stdout (see :func:`bigvocab.bench.suites.distributed.run_worker`)."""

from __future__ import annotations

import json
import sys

from bigvocab.bench.suites.distributed import run_worker


def main() -> None:
    for row in run_worker(json.loads(sys.stdin.read())):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
