"""The Extreme Classification Repository reader and labelled rows as batches."""

from __future__ import annotations

import pytest
import torch

from bigvocab.data.xmc import LabelledRows, read_xmc
from bigvocab.errors import DataError

SAMPLE = "3 6 4\n0,2 1:0.5 4:2\n 0:1\n3 5:0.25 2:1 1:3\n"


def test_read_xmc_rows_and_labels(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(SAMPLE)
    rows = read_xmc(path)
    assert (len(rows), rows.num_features, rows.num_labels) == (3, 6, 4)
    assert rows.labels.tolist() == [[0, 2], [-1, -1], [3, -1]]
    assert rows.feature_offsets.tolist() == [0, 2, 3, 6]
    assert rows.feature_ids.tolist() == [1, 4, 0, 5, 2, 1]
    assert rows.feature_values.tolist() == [0.5, 2.0, 1.0, 0.25, 1.0, 3.0]
    assert rows.label_counts().tolist() == [1, 0, 1, 1]


def test_rows_batch_is_each_rows_bag():
    rows = LabelledRows(
        torch.tensor([0, 2, 3, 6]),
        torch.tensor([1, 4, 0, 5, 2, 1]),
        torch.arange(6.0),
        torch.tensor([[0, 2], [1, -1], [3, 3]]),
        6,
        4,
    )
    batch = rows.rows(torch.tensor([2, 0]))
    assert batch["features"].tolist() == [5, 2, 1, 1, 4]
    assert batch["weights"].tolist() == [3.0, 4.0, 5.0, 0.0, 1.0]
    assert batch["offsets"].tolist() == [0, 3]
    assert batch["target"].tolist() == [[3, 3], [0, 2]]
    assert rows.label_counts().tolist() == [1, 1, 1, 1]
    part = rows.subset(torch.tensor([2, 0]))
    assert part.feature_offsets.tolist() == [0, 3, 5]
    assert part.rows(torch.tensor([1]))["features"].tolist() == [1, 4]


@pytest.mark.parametrize(
    "content, message",
    [
        ("3 6\n", "line 1: the header"),
        ("1 6 4\n0 9:1\n", "line 2: a feature id"),
        ("1 6 4\n7 1:1\n", "line 2: a label id"),
        ("1 6 4\n0 1-1\n", "line 2: expected"),
        ("2 6 4\n0 1:1\n", "header says 2 rows"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_xmc(path)
    with pytest.raises(DataError, match="no such XMC file"):
        read_xmc(tmp_path / "missing.txt")
