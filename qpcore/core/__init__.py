"""The problem, the loop and the certificate: :class:`~qpcore.core.problem.QP`, :func:`~qpcore.core.solve.solve`,
:func:`~qpcore.core.certificate.kkt` and its primitives (:mod:`~qpcore.core.optimality`), the per-run state, the
strategy contract and the working-set protocol (:mod:`~qpcore.core.rules`)."""
