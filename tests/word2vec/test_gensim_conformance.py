"""gensim 4's own ``TestWord2VecModel`` run against ``bigvocab.Word2Vec``.

gensim's test module is loaded from the installed gensim (the ``interop`` extra) and its
``word2vec.Word2Vec`` is replaced by ``bigvocab.Word2Vec``, nothing else changed; every test of
the class must pass but those listed in :data:`EXPECTED_FAILURES`, each with its reason
(docs/word2vec.md), so a test that starts failing, or an expected failure that starts passing,
fails this one.
"""

from __future__ import annotations

import importlib
import types
import unittest

import pytest

pytest.importorskip("numba")
pytest.importorskip("testfixtures")  # gensim's test module imports it
gensim_word2vec = pytest.importorskip("gensim.models.word2vec")

import bigvocab  # noqa: E402

#: gensim's tests that bigvocab.Word2Vec fails on purpose, and why.
EXPECTED_FAILURES: dict[str, str] = {}

#: Skipped by gensim itself unless BULK_TEST_REPS is set.
SKIPPED_BY_GENSIM = {"test_method_in_bulk"}


def _gensim_suite() -> unittest.TestSuite:
    module = importlib.import_module("gensim.test.test_word2vec")
    substitute = types.ModuleType("word2vec")
    substitute.__dict__.update(vars(gensim_word2vec))
    substitute.Word2Vec = bigvocab.Word2Vec
    module.word2vec = substitute  # the test class reads ``word2vec.Word2Vec`` at call time
    return unittest.defaultTestLoader.loadTestsFromTestCase(module.TestWord2VecModel)


@pytest.mark.slow
def test_gensims_word2vec_tests_pass_against_bigvocab():
    suite = _gensim_suite()
    result = unittest.TestResult()
    suite.run(result)
    name = lambda test: test.id().rsplit(".", 1)[-1]
    failed = {name(test): trace.strip().splitlines()[-1] for test, trace in result.failures + result.errors}
    skipped = {name(test) for test, _ in result.skipped}
    assert result.testsRun == 74
    assert skipped == SKIPPED_BY_GENSIM
    unexpected = {test: line for test, line in failed.items() if test not in EXPECTED_FAILURES}
    assert not unexpected, f"gensim's tests failing against bigvocab.Word2Vec: {unexpected}"
    assert set(EXPECTED_FAILURES) <= set(failed), f"now passing: {set(EXPECTED_FAILURES) - set(failed)}"
