"""``hsm``'s path steps for the bench's 1,024 targets alone: found by walking up the tree one level
per step (the code before) or gathered from the stored paths (``_steps`` now), on one layer, one
process, torch's 2 threads; medians of 51 calls, 3 rounds.

    PYTHONPATH=src python results/hsm-path-gather/steps_alone.py 10000 1000000
"""
import sys
import types
from pathlib import Path

import torch

from bigvocab.bench.operations import make_workload
from bigvocab.factory import create_output

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
sys.path.insert(0, str(here.parent / "hsm-1m-log-softmax"))
from ab import walked_steps  # noqa: E402
from hsm_vs_full import median_ms  # noqa: E402


def main() -> None:
    torch.set_num_threads(2)
    for vocab in map(int, sys.argv[1:]):
        counts = [max(1, 10_000_000 // (rank + 1)) for rank in range(vocab)]
        layer = create_output("hsm", 256, vocab, counts=counts)
        target = make_workload(counts, 256, 1024, 1024, seed=0, device=torch.device("cpu")).target
        walked, gathered = types.MethodType(walked_steps, layer), layer._steps
        same = [sorted(zip(*(part.tolist() for part in steps(target)))) for steps in (walked, gathered)]
        assert same[0] == same[1]
        for round_ in range(3):
            ms = {name: median_ms(lambda: steps(target), 51) for name, steps in (("walked", walked), ("gathered", gathered))}
            print(f"V={vocab} round {round_ + 1}: walked {ms['walked']:.3f} ms  gathered {ms['gathered']:.3f} ms "
                  f"({ms['walked'] / ms['gathered']:.1f}x), {len(same[0])} steps", flush=True)


if __name__ == "__main__":
    main()
