"""log Z statistics against a brute-force loop over the contexts."""

from __future__ import annotations

import pytest
import torch

from bigvocab.errors import ConfigError
from bigvocab.evaluate import log_normaliser_stats
from bigvocab.models import build_model


def _ids() -> torch.Tensor:
    return torch.randint(0, 40, (300,), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("output", ["full", "selfnorm", "nce"])
def test_matches_the_logsumexp_of_every_context(output):
    torch.manual_seed(0)
    model = build_model(
        "nnlm",
        40,
        output,
        counts=list(range(40, 0, -1)),
        model_kwargs={"context": 2, "embedding_dim": 6, "hidden_dim": 5},
    )
    ids = _ids()
    stats = log_normaliser_stats(model, ids, batch_size=7)
    values = []
    with torch.no_grad():
        for batch in model.batches(ids, 1000, train=False, generator=None):
            values.append(torch.logsumexp(model.output.logits(model.features(batch)), dim=1))
    values = torch.cat(values).double()
    assert stats.count == values.numel() == 299  # the first target has a padded context
    assert stats.mean == pytest.approx(float(values.mean()), abs=1e-5)
    assert stats.std == pytest.approx(float(values.std(unbiased=False)), abs=1e-5)
    assert stats.max_abs == pytest.approx(float(values.abs().max()), abs=1e-5)
    assert model.training


def test_layers_without_one_normaliser_are_refused():
    model = build_model(
        "nnlm",
        40,
        "hsm",
        model_kwargs={"context": 2, "embedding_dim": 6, "hidden_dim": 5},
        counts=[40 - i for i in range(40)],
    )
    with pytest.raises(ConfigError, match="no single normaliser"):
        log_normaliser_stats(model, _ids())
