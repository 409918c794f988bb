"""The linear-algebra backends: every way a strategy touches Q (:class:`~qpcore.backends.capabilities.QOperator`
and its declared capabilities; dense, kernel rows with a cache, Gram, diagonal plus low rank, doubled, growing,
sparse and chunked operators)."""
