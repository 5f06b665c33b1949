"""The ``bigvocab::`` operator library: each compiled kernel a layer calls, as a PyTorch operator.

An operator, rather than a Python call into numba, is what ``torch.compile``, FX tracing and the
meta device can see: its schema says what it reads and writes, its fake implementation gives the
shapes and dtypes of its outputs without running it, and (for the pair scores) its autograd
formula is registered with it, its backward made of operators too. The layers call the operators
through the functions of :mod:`~bigvocab.kernels.pairs`, :mod:`~bigvocab.kernels.ids` and
:mod:`~bigvocab.kernels.trees`, unchanged.

They are defined on a :class:`torch.library.Library` (schema, CPU kernel, fake) rather than by
``torch.library.custom_op``, whose Python wrappers cost about 46 us a call against 9 us here (an
empty op, one thread, quiet machine), and ``pair_dots``'s autograd kernel is an
``autograd.Function`` registered at the Autograd key rather than ``register_autograd``'s wrapper
(about 100 against 30 us): a training step calls five operators (``docs/design/custom-ops.md``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

#: The library the ``bigvocab::`` operators are defined in (a fragment: each module adds its own).
LIBRARY = torch.library.Library("bigvocab", "FRAGMENT")


def define(schema: str, kernel: Callable, fake: Callable) -> torch._ops.OpOverload:
    """Define ``bigvocab::<schema>`` with ``kernel`` for CPU tensors and ``fake`` for fake and
    meta tensors (outputs of the right shapes, dtypes and devices, no data); returns the operator.

    The kernel is hidden from Dynamo: where a compiled function breaks its graph at the operator
    (an output whose size depends on the data) the operator runs eagerly, and Dynamo would
    otherwise trace the kernel's Python into numba's dispatcher, which it cannot."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    LIBRARY.impl(name, torch.compiler.disable(kernel), "CPU")
    torch.library.register_fake(f"bigvocab::{name}", fake, lib=LIBRARY)
    return getattr(torch.ops.bigvocab, name).default
