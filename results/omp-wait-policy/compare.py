"""Training steps under OpenMP's default wait policy (torch's threads spin for a while after each
parallel region) and under ``OMP_WAIT_POLICY=PASSIVE`` (they sleep at once), in alternating
processes, for each layer named.

    THP_MEM_ALLOC_ENABLE=1 python results/omp-wait-policy/compare.py V 'SPEC,SPEC,...' ROUNDS [VARIANTS]

VARIANTS (default ``default,passive``) are among: ``default``, ``passive`` (the policy), and
``passive-split`` (PASSIVE, and the pair and tree kernels' threshold for a second thread lowered
from 2**23 to 2**20 multiply-adds, so that their calls at V = 1M use both cores). Each round runs
every variant once per layer, the order of the variants reversed every other round; each run is
``steps.py`` (median of 30 steps). Prints every run, then per layer the median over rounds of
each variant and of the per-round ratio default / variant (above 1: the variant faster).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

STEPS = str(Path(__file__).resolve().parent / "steps.py")
VARIANTS = {
    "default": ({}, []),
    "passive": ({"OMP_WAIT_POLICY": "PASSIVE"}, []),
    "passive-split": ({"OMP_WAIT_POLICY": "PASSIVE"}, [str(2**20)]),
}


def run(spec: str, vocab: int, variant: str) -> float:
    env, extra = VARIANTS[variant]
    done = subprocess.run([sys.executable, STEPS, spec, str(vocab), *extra], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    vocab, specs, rounds = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
    variants = sys.argv[4].split(",") if len(sys.argv) > 4 else ["default", "passive"]
    times = {(spec, variant): [] for spec in specs for variant in variants}
    for round_ in range(rounds):
        for spec in specs:
            for variant in variants if round_ % 2 == 0 else variants[::-1]:
                seconds = run(spec, vocab, variant)
                times[spec, variant].append(seconds)
                print(f"round {round_ + 1} V={vocab} {spec} {variant}: {seconds:.2f} ms", flush=True)
    for spec in specs:
        base = times[spec, variants[0]]
        parts = [f"{variant} {statistics.median(times[spec, variant]):.2f} ms" for variant in variants]
        ratios = [
            f"{variants[0]}/{variant} {statistics.median(a / b for a, b in zip(base, times[spec, variant])):.3f}"
            for variant in variants[1:]
        ]
        print(f"V={vocab} {spec}: " + ", ".join(parts) + "; median ratio " + ", ".join(ratios), flush=True)


if __name__ == "__main__":
    main()
