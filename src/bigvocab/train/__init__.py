"""Training: :class:`Trainer` and :class:`TrainConfig`, with their parts in submodules.

* :mod:`~bigvocab.train.config` -- the options of a run, the device rules;
* :mod:`~bigvocab.train.optimizers` -- optimisers by name, sparse gradients kept sparse;
* :mod:`~bigvocab.train.schedules` -- learning-rate schedules by name;
* :mod:`~bigvocab.train.state` -- random-number state for exact resume;
* :mod:`~bigvocab.train.rundir` -- run directories: their files, their lock;
* :mod:`~bigvocab.train.trainer` -- the loop, checkpoints, interrupts.
"""

from bigvocab.train.config import RESUME_OVERRIDES, TrainConfig, resolve_device
from bigvocab.train.optimizers import build_optimizers, clip_grad_norm
from bigvocab.train.rundir import CLI_SPELLING, PYTHON_SPELLING, RUN_FILES, RunLock, check_out_dir
from bigvocab.train.schedules import LRSchedule, make_schedule
from bigvocab.train.state import epoch_generator, get_rng_state, seed_everything, set_rng_state
from bigvocab.train.trainer import DivergenceWarning, Trainer

__all__ = [
    "CLI_SPELLING",
    "PYTHON_SPELLING",
    "RESUME_OVERRIDES",
    "RUN_FILES",
    "DivergenceWarning",
    "LRSchedule",
    "RunLock",
    "TrainConfig",
    "Trainer",
    "build_optimizers",
    "check_out_dir",
    "clip_grad_norm",
    "epoch_generator",
    "get_rng_state",
    "make_schedule",
    "resolve_device",
    "seed_everything",
    "set_rng_state",
]
