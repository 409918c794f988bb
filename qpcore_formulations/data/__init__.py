"""Data sets: LIBSVM/SVMlight text files, the shared real sets and Platt's synthetic sets."""

__all__: list[str] = []
