"""``bigvocab bench --ann`` end to end at a toy size, and its recall measure."""
from __future__ import annotations

import argparse

import torch

from bigvocab.bench import ann


def test_recall_counts_shared_ids_per_query():
    exact = torch.tensor([[1, 2, 3], [4, 5, 6]])
    found = torch.tensor([[3, 9, 1], [7, 8, 9]])
    assert ann.recall(found, exact) == 2 / 6


def test_the_ann_bench_writes_a_row_per_sweep_point(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "SWEEPS", {"lsh": [({"bits": 6, "tables": 4}, [{"probes": 0}, {"probes": 2}])],
                                        "faiss-ivf": [({"nlist": 8}, [{"nprobe": 8, "candidates": 10}])]})
    args = argparse.Namespace(out=tmp_path, vocab_sizes="3000", hidden=16, batch=8, repeats=1, seed=0, outputs=None)
    assert ann.main(args) == 0
    report = (tmp_path / "report.md").read_text()
    assert report.count("| lsh |") == 2 and report.count("| faiss-ivf |") == 1
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert len(rows) == 3
    # nprobe = nlist scans every row: the index path is then exact.
    assert '"recall": 1.0' in rows[2]
