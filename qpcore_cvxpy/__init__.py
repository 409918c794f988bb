"""A CVXPY solver interface over qpcore's strategies (the optional ``cvxpy`` extra).

Model in CVXPY, solve with any qpcore strategy::

    import cvxpy as cp
    from qpcore_cvxpy import QPCORE

    problem.solve(solver=QPCORE(), strategy="active-set", tol=1e-9)

Like the command line and the scikit-learn estimators, this package sits on top of ``qpcore``,
``strategies`` and ``problems``; none of them imports it, and CVXPY is never a runtime
dependency of the library.

- :class:`QPCORE`: CVXPY's QP solver interface (a ``QpSolver``, used as a custom solver
  instance): CVXPY's QP form, ``min ½xᵀPx + qᵀx  s.t.  A x = b, F x ≤ g`` and the variables'
  bounds, goes to :func:`qpcore.solve_qp`; the point, the dual values in CVXPY's signs and the
  status come back.
"""

from __future__ import annotations

from qpcore_cvxpy.solver import QPCORE

__all__ = ["QPCORE"]
