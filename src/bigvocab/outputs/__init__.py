"""Output layers: importing this package registers every scorer and every method.

Adding a layer is one new file here plus its import line below:

* an objective over any scorer: subclass :class:`~bigvocab.outputs.objective.ScoredOutput` (or
  :class:`~bigvocab.outputs.sampling.SamplingOutput` when it draws samples, or
  :class:`~bigvocab.outputs.candidates.CandidateOutput` when it scores positives against
  candidates from a sampler, the batch or hard negatives and writes only ``_objective``), write
  ``_loss(hidden, target, context)`` with ``self.class_logits`` / ``self.target_logits`` /
  ``self.target_and_class_logits`` / ``self.log_normaliser`` and ``_train_scores(target)`` (the
  scores a step computes, for its cost model), take ``**scorer_options`` and pass them on;
* a layer with its own structure: subclass :class:`~bigvocab.outputs.base.OutputLayer`, write
  ``_loss`` (or inherit the exact NLL), ``_log_prob``, ``_log_softmax``, ``_topk`` and its cost
  model (``train_cost`` / ``log_prob_cost``), take ``device=`` and ``dtype=``;
* a scorer (how a word is scored): subclass :class:`~bigvocab.outputs.scorers.base.Scorer` or
  :class:`~bigvocab.outputs.scorers.rows.RowScorer` in ``scorers/`` and register it in
  ``SCORERS``; every objective then runs over it and the contract suite tests each pair.

Decorate the class with ``@OUTPUTS.register("name")`` and declare what the rest of the package
reads: ``variants``, ``sparse_grad``, ``topk_by_search``, ``eval_cache``, ``self_normalised``,
``dense_logits``, ``engine_kind`` (word2vec's compiled update, :mod:`~bigvocab.outputs.engine`),
and side inputs by naming ``counts`` / ``words`` / ``vectors`` as keywords. The factory, the
contract tests, the models and the bench then pick it up with no other edit.
"""

# The import order is the registration order, which listings and the bench follow.
# isort: off
from bigvocab.outputs import scorers  # noqa: F401  (registers the scorers)
from bigvocab.outputs import fused  # noqa: F401  (registers the fused row optimizers)
from bigvocab.outputs import full  # noqa: F401  (registers)
from bigvocab.outputs import hsm  # noqa: F401  (registers)
from bigvocab.outputs import dsoftmax  # noqa: F401  (registers)
from bigvocab.outputs import cnn  # noqa: F401  (registers)
from bigvocab.outputs import adaptive  # noqa: F401  (registers)
from bigvocab.outputs import sampled  # noqa: F401  (registers)
from bigvocab.outputs import ais  # noqa: F401  (registers)
from bigvocab.outputs import target  # noqa: F401  (registers)
from bigvocab.outputs import nce  # noqa: F401  (registers)
from bigvocab.outputs import neg  # noqa: F401  (registers)
from bigvocab.outputs import bce  # noqa: F401  (registers)
from bigvocab.outputs import selfnorm  # noqa: F401  (registers)
from bigvocab.outputs import infreq  # noqa: F401  (registers)
from bigvocab.outputs import char  # noqa: F401  (registers)

# isort: on
from bigvocab.outputs.base import OutputLayer
from bigvocab.outputs.objective import ScoredOutput
from bigvocab.outputs.scorers import RowScorer, Scorer

__all__ = ["OutputLayer", "RowScorer", "ScoredOutput", "Scorer"]
