"""The compiler flags every numba kernel of bigvocab carries."""

#: LLVM's fast-math flags minus "no NaN / no Inf" (so NaN checks keep working): reductions vectorise.
#: Every kernel carries them, because numba-level inlining keeps the caller's flags.
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}
