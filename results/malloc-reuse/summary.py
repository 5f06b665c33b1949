"""Per layer: medians over the processes of each policy in steps-paired.log, and in how many
rounds heap32 was faster.

    python results/malloc-reuse/summary.py results/malloc-reuse/steps-paired.log
"""
import collections
import statistics
import sys

times: dict = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    policy, name, vocab, *_ = line.split()
    name = f"{name} {vocab}"
    times[name][policy].append(float(line.split("median ")[1].split()[0]))
for name, by_policy in times.items():
    default, heap32 = by_policy["default"], by_policy["heap32"]
    wins = sum(a > b for a, b in zip(default, heap32))
    print(f"{name:20s} default {statistics.median(default):6.2f} ms  heap32 {statistics.median(heap32):6.2f} ms  "
          f"heap32 faster in {wins}/{min(len(default), len(heap32))} rounds")
