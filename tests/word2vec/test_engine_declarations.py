"""The engine reads what output layers declare (``engine_kind``, ``engine_unsupported``,
``engine_tables``; see bigvocab.outputs.engine) and trains the layer's own parameters in place."""

from __future__ import annotations

import pytest
import torch

from bigvocab.errors import ConfigError
from bigvocab.models import build_model
from bigvocab.outputs.engine import ENGINE_KINDS, engine_kind_of, layer_for_engine_kind
from bigvocab.outputs.factory import create_output, list_outputs
from bigvocab.registry import OUTPUTS
from bigvocab.word2vec.engine import engine_arrays, engine_unsupported

V, H = 30, 8
COUNTS = [100 - 3 * i for i in range(V)]
WORDS = [f"w{i}" for i in range(V)]
#: word2vec's layers as bigvocab.Word2Vec builds them.
ENGINE_LAYERS = {"neg": {}, "hsm": {"bias": False, "zero_init": True}}


def test_only_word2vecs_layers_declare_an_engine_update():
    kinds = {name: OUTPUTS.get(name).engine_kind for name in list_outputs()}
    assert {name for name, kind in kinds.items() if kind is not None} == set(ENGINE_LAYERS)
    assert {kinds[name] for name in ENGINE_LAYERS} == set(ENGINE_KINDS)


def test_gensims_flags_find_their_layer_by_its_declaration():
    """``hs``/``negative`` pick the layer that declares the kind, and its word2vec options follow."""
    from bigvocab.models.word2vec import word2vec_defaults, word2vec_output_options

    for kind in ENGINE_KINDS:
        assert engine_kind_of(layer_for_engine_kind(kind)) == kind
    assert {name: word2vec_output_options(name) for name in ENGINE_LAYERS} == ENGINE_LAYERS
    assert engine_kind_of(word2vec_defaults()["output"]) == "neg"
    with pytest.raises(ValueError, match="engine_kind='sg'"):
        layer_for_engine_kind("sg")


@pytest.mark.parametrize("name", sorted(ENGINE_LAYERS))
def test_tables_hold_the_layers_own_parameter(name):
    layer = create_output(name, H, V, counts=COUNTS, **ENGINE_LAYERS[name])
    assert layer.engine_unsupported() is None
    tables = layer.engine_tables()
    assert tables.kind == layer.engine_kind
    owned = layer.scorer.weight if name == "neg" else layer.weight
    assert tables.rows is owned
    if tables.kind == "neg":
        torch.testing.assert_close(tables.noise.sum(), torch.tensor(1.0))
        assert tables.noise.shape == (V,) and tables.num_samples == layer.num_samples
    else:  # every leaf's path, row and code, as the tree gives them
        for leaf in (0, V // 2, V - 1):
            start, end = int(tables.path_offsets[leaf]), int(tables.path_offsets[leaf + 1])
            assert tuple(tables.path_codes[start:end].tolist()) == layer.tree.code(leaf)
            assert tables.path_rows[start:end].tolist() == layer._param_base[layer.tree.path(leaf)].tolist()


@pytest.mark.parametrize(
    "name, options, reason",
    [
        ("neg", {"bias": True}, "no bias"),
        ("neg", {"scorer": "cnn", "words": WORDS}, "free output rows"),
        ("neg", {"shared": True}, "per example"),
        ("neg", {"remove_accidental_hits": False}, "remove_accidental_hits"),
        ("neg", {"sampler": "learned"}, "adapts"),
        ("hsm", {"bias": True}, "no bias"),
        ("hsm", {"bias": False, "tree": "class"}, "binary tree"),
    ],
)
def test_a_layer_says_why_the_engine_cannot_train_it(name, options, reason):
    layer = create_output(name, H, V, counts=COUNTS, **options)
    assert reason in layer.engine_unsupported()
    with pytest.raises(ConfigError, match=reason):
        layer.engine_tables()


def test_a_layer_without_an_engine_update_is_named():
    model = build_model("skipgram", V, "nce", counts=COUNTS, model_kwargs={"vector_size": H, "sample": 0})
    assert engine_unsupported(model) == "the engine trains hsm and neg layers, not 'nce'"
    with pytest.raises(ConfigError, match="not 'nce'"):
        model.output.engine_tables()


@pytest.mark.parametrize("name", sorted(ENGINE_LAYERS))
def test_engine_arrays_are_views_of_the_models_tensors(name):
    """No copy: the numpy arrays start at the parameters' memory, and a write through them is a
    write to the model."""
    model = build_model(
        "skipgram",
        V,
        name,
        counts=COUNTS,
        model_kwargs={"vector_size": H, "sample": 0},
        output_kwargs=ENGINE_LAYERS[name],
    )
    rows = model.output.scorer.weight if name == "neg" else model.output.weight
    arrays = engine_arrays(model)
    assert arrays.syn0.ctypes.data == model.embedding.weight.data_ptr()
    assert arrays.syn1.ctypes.data == rows.data_ptr() and arrays.syn1.shape == tuple(rows.shape)
    arrays.syn1[3, 1] = -7.0
    assert rows[3, 1].item() == -7.0
    assert arrays.hs == (name == "hsm")


@pytest.mark.parametrize("sg, hs", [(1, 0), (0, 1)])
def test_training_moves_the_models_parameters(small_corpus, sg, hs):
    pytest.importorskip("numba")
    from bigvocab import Word2Vec

    sentences, _ = small_corpus
    model = Word2Vec(
        vector_size=8, window=2, min_count=1, workers=1, progress=False, sg=sg, hs=hs, negative=0 if hs else 5, seed=1
    )
    model.build_vocab(sentences[:200])
    output = model.module.output
    rows = output.scorer.weight if not hs else output.weight
    before = rows.detach().clone()
    assert model.uses_engine and not before.any()  # word2vec's output vectors start at zero
    model.train(sentences[:200], total_examples=model.corpus_count, epochs=1)
    assert rows.detach().abs().sum() > 0
    view = model.syn1 if hs else model.syn1neg
    assert view.ctypes.data == rows.data_ptr()
