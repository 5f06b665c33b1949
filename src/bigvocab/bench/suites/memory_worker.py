"""Child-process entry of the CPU memory measurement: a JSON spec on stdin, one JSON line per
row on stdout (see :func:`bigvocab.bench.suites.memory.measure_rows`)."""

from __future__ import annotations

import json
import sys

from bigvocab.bench.suites.memory import measure_rows


def main() -> None:
    for row in measure_rows(json.loads(sys.stdin.read())):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
