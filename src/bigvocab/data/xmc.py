"""Labelled rows of retrieval and extreme multi-label classification (XMC): a sparse bag of
features and a set of labels per example, and the reader of the Extreme Classification
Repository's sparse text format (Bhatia et al., http://manikvarma.org/downloads/XC/XMLRepository.html).

The format: a header line ``N D L`` (examples, features, labels), then one line per example,
``l1,l2,... f1:v1 f2:v2 ...``: comma-separated label ids (possibly none: the line then starts with
a space) and the example's features as ``id:value`` pairs. Ids count from 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from bigvocab.errors import DataError
from bigvocab.validation import check_positive_int


@dataclass
class LabelledRows:
    """N examples, each a bag of features with values and a set of labels.

    Attributes:
        feature_offsets: (N + 1,) int64; row n's features are ``feature_ids[offsets[n]:offsets[n+1]]``.
        feature_ids: (nnz,) int64 in [0, num_features).
        feature_values: (nnz,) float32, the weight of each feature in its row's bag.
        labels: (N, T) int64 label ids in [0, num_labels), padded with -1 (the output layers'
            multi-label targets); a row may hold no label (all -1).
        num_features: D.
        num_labels: L.
    """

    feature_offsets: Tensor
    feature_ids: Tensor
    feature_values: Tensor
    labels: Tensor
    num_features: int
    num_labels: int

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def rows(self, index: Tensor) -> dict[str, Tensor]:
        """The examples ``index`` (1-D) as a batch: ``features`` (nnz,) ids, ``offsets`` (B,)
        where each row's features start, ``weights`` (nnz,) and ``target`` (B, T)."""
        starts, stops = self.feature_offsets[index], self.feature_offsets[index + 1]
        lengths = stops - starts
        offsets = torch.zeros_like(lengths)
        offsets[1:] = lengths.cumsum(0)[:-1]
        # position j of the batch's flat bag belongs to row r: starts[r] + (j - offsets[r])
        owner = torch.repeat_interleave(torch.arange(index.numel(), device=index.device), lengths)
        flat = starts[owner] + torch.arange(int(lengths.sum()), device=index.device) - offsets[owner]
        return {
            "features": self.feature_ids[flat],
            "offsets": offsets,
            "weights": self.feature_values[flat],
            "target": self.labels[index],
        }

    def label_counts(self) -> Tensor:
        """(L,) int64: how many rows carry each label (a label listed twice in a row counts once)."""
        ordered, distinct = distinct_labels(self.labels)
        return torch.bincount(ordered[distinct], minlength=self.num_labels)

    def subset(self, index: Tensor) -> LabelledRows:
        """The rows ``index`` (1-D) as their own :class:`LabelledRows`."""
        batch = self.rows(index)
        lengths = self.feature_offsets[index + 1] - self.feature_offsets[index]
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
        return LabelledRows(
            offsets, batch["features"], batch["weights"], batch["target"], self.num_features, self.num_labels
        )


def distinct_labels(labels: Tensor) -> tuple[Tensor, Tensor]:
    """(N, T) labels padded with -1 -> each row sorted, and a (N, T) bool marking each distinct
    label of a row once (a label listed twice is one label; -1 is none)."""
    ordered = labels.sort(dim=1).values
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    return ordered, first & (ordered >= 0)


def read_xmc(path: str | Path) -> LabelledRows:
    """Read a file in the Extreme Classification Repository's sparse format (module docstring).

    Raises a :class:`DataError` naming the file and line of a malformed header or row, an id out
    of the header's range, or a row count that differs from the header's N.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{str(path)!r}: no such XMC file")
    with path.open(encoding="utf-8") as lines:
        header = lines.readline().split()
        try:
            num_rows, num_features, num_labels = (int(value) for value in header)
            for name, value in (("N", num_rows), ("D", num_features), ("L", num_labels)):
                check_positive_int(name, value)
        except ValueError:
            raise DataError(f"{str(path)!r}, line 1: the header must be 'N D L' (three positive ints)") from None
        offsets, ids, values, labels = [0], [], [], []
        for number, line in enumerate(lines, start=2):
            if not line.strip():
                continue
            row_labels, row_ids, row_values = _parse_row(line, path, number, num_features, num_labels)
            labels.append(row_labels)
            ids.extend(row_ids)
            values.extend(row_values)
            offsets.append(len(ids))
    if len(labels) != num_rows:
        raise DataError(f"{str(path)!r}: the header says {num_rows} rows, the file holds {len(labels)}")
    width = max((len(row) for row in labels), default=1) or 1
    padded = torch.full((num_rows, width), -1, dtype=torch.long)
    for n, row in enumerate(labels):
        padded[n, : len(row)] = torch.tensor(row, dtype=torch.long)
    return LabelledRows(
        torch.tensor(offsets, dtype=torch.long),
        torch.tensor(ids, dtype=torch.long),
        torch.tensor(values, dtype=torch.float32),
        padded,
        num_features,
        num_labels,
    )


def write_xmc(rows: LabelledRows, path: str | Path) -> None:
    """Write ``rows`` in the repository's sparse format (what :func:`read_xmc` reads back)."""
    lines = [f"{len(rows)} {rows.num_features} {rows.num_labels}"]
    offsets = rows.feature_offsets.tolist()
    ids, values = rows.feature_ids.tolist(), rows.feature_values.tolist()
    for n, labels in enumerate(rows.labels.tolist()):
        pairs = " ".join(f"{ids[j]}:{values[j]:g}" for j in range(offsets[n], offsets[n + 1]))
        lines.append(",".join(str(label) for label in labels if label >= 0) + " " + pairs)
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _parse_row(
    line: str, path: Path, number: int, num_features: int, num_labels: int
) -> tuple[list[int], list[int], list[float]]:
    where = f"{str(path)!r}, line {number}"
    fields = line.rstrip("\n").split(" ")
    try:
        labels = [int(label) for label in fields[0].split(",")] if fields[0] else []
        pairs = [field.split(":") for field in fields[1:] if field]
        ids = [int(feature) for feature, _ in pairs]
        values = [float(value) for _, value in pairs]
    except ValueError:
        raise DataError(f"{where}: expected 'l1,l2,... f:v f:v ...', got {line.strip()[:60]!r}") from None
    if any(not 0 <= label < num_labels for label in labels):
        raise DataError(f"{where}: a label id lies outside [0, {num_labels}) (the header's L)")
    if any(not 0 <= feature < num_features for feature in ids):
        raise DataError(f"{where}: a feature id lies outside [0, {num_features}) (the header's D)")
    return labels, ids, values
