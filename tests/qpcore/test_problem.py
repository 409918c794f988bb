"""QP validation: every bad input is a ProblemError naming its field."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import qpcore
from qpcore.testkit.generators import random_box_qp
from qpcore import QP, DenseQ, Kernel, KernelQ, ProblemError
from qpcore.backends.capabilities import Operator

I2 = np.eye(2)

#: how a refusal names each field: in words, the field's own name kept (regex-escaped where needed)
SUBJECT = {"Q": "the Hessian Q", "c": "the linear term c", "lb": "the lower bounds lb", "ub": "the upper bounds ub",
           "A": "the equality rows A", "b": "the equality right-hand side b", "X": "the data X"}


def test_problem_error_is_value_error() -> None:
    assert issubclass(ProblemError, ValueError)


def test_valid_problem_defaults() -> None:
    qp = QP(I2, [1, -1])
    assert qp.n == 2 and qp.m == 0
    assert qp.c.dtype == np.float64
    assert np.all(qp.lb == -np.inf) and np.all(qp.ub == np.inf)
    assert qp.A.shape == (0, 2) and qp.b.shape == (0,)
    assert isinstance(qp.Q, DenseQ)


def test_scalar_bounds_broadcast_and_one_row_equality() -> None:
    qp = QP(I2, [0, 0], 0.0, 2.0, A=[1, -1], b=0.5)
    np.testing.assert_array_equal(qp.lb, [0, 0])
    np.testing.assert_array_equal(qp.ub, [2, 2])
    assert qp.A.shape == (1, 2) and qp.b.shape == (1,)


def test_objective_and_gradient() -> None:
    Q = np.array([[2.0, 1.0], [1.0, 3.0]])
    qp = QP(Q, [1.0, -2.0])
    x = np.array([0.5, -1.0])
    assert qp.objective(x) == pytest.approx(0.5 * x @ Q @ x + qp.c @ x)
    np.testing.assert_allclose(qp.gradient(x), Q @ x + qp.c)


# --- non-finite values: each field named -----------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_Q(bad: float) -> None:
    Q = np.eye(3)
    Q[1, 1] = bad
    with pytest.raises(ProblemError, match=r"^the Hessian Q:"):
        QP(Q, np.zeros(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_c(bad: float) -> None:
    with pytest.raises(ProblemError, match=r"^the linear term c:.*index 1"):
        QP(np.eye(3), [0.0, bad, 0.0])


@pytest.mark.parametrize("field", ["lb", "ub"])
def test_nan_bounds(field: str) -> None:
    kw: dict[str, Any] = {field: [0.0, np.nan]}
    with pytest.raises(ProblemError, match=rf"^{SUBJECT[field]}:.*NaN"):
        QP(I2, [0, 0], **kw)


def test_infinite_bounds_allowed_on_the_open_side() -> None:
    qp = QP(I2, [0, 0], [-np.inf, 0.0], [np.inf, np.inf])
    assert qp.lb[0] == -np.inf


@pytest.mark.parametrize(("lb", "ub"), [(np.inf, np.inf), (-np.inf, -np.inf)])
def test_bounds_excluding_every_point(lb: float, ub: float) -> None:
    with pytest.raises(ProblemError, match=r"lb"):
        QP(I2, [0, 0], lb, ub)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_A(bad: float) -> None:
    with pytest.raises(ProblemError, match=r"^the equality rows A:"):
        QP(I2, [0, 0], A=[[1.0, bad]], b=[0.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_b(bad: float) -> None:
    with pytest.raises(ProblemError, match=r"^the equality right-hand side b:"):
        QP(I2, [0, 0], A=[[1.0, 1.0]], b=[bad])


# --- shapes ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "field"), [
    ({"c": [0.0, 0.0, 0.0]}, "c"),
    ({"c": [[0.0], [0.0]]}, "c"),
    ({"c": [0.0, 0.0], "lb": [0.0, 0.0, 0.0]}, "lb"),
    ({"c": [0.0, 0.0], "ub": [1.0]}, "ub"),
    ({"c": [0.0, 0.0], "A": [[1.0, 1.0, 1.0]]}, "A"),
    ({"c": [0.0, 0.0], "A": np.zeros((1, 1, 2))}, "A"),
    ({"c": [0.0, 0.0], "A": [1.0, 1.0], "b": [0.0, 0.0]}, "b"),
    ({"c": [0.0, 0.0], "A": [[1.0, 1.0], [1.0, -1.0]], "b": [0.0]}, "b"),
])
def test_shape_mismatch_names_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ProblemError, match=rf"^{SUBJECT[field]}:"):
        QP(I2, **kwargs)


@pytest.mark.parametrize("Q", [np.ones((2, 3)), np.ones(3), np.ones((2, 2, 2))])
def test_non_square_Q(Q: Any) -> None:
    with pytest.raises(ProblemError, match=r"^the Hessian Q: not square"):
        QP(Q, [0.0, 0.0])


def test_non_square_operator() -> None:
    class Rect(Operator):
        shape = (2, 3)
        stats = qpcore.OperatorStats()

        def row(self, i: int) -> Any:
            return i

        def matvec(self, x: Any) -> Any:
            return x

        def rows(self, idx: Any) -> Any:
            return idx

        def diag(self) -> Any:
            return np.ones(2)

    with pytest.raises(ProblemError, match=r"^the Hessian Q: not square"):
        QP(Rect(), [0.0, 0.0])


def test_non_symmetric_Q() -> None:
    with pytest.raises(ProblemError, match=r"^the Hessian Q: not symmetric"):
        QP(np.array([[1.0, 0.5], [0.0, 1.0]]), [0, 0])


def test_symmetric_to_rounding_is_accepted() -> None:
    Q = np.array([[1.0, 0.5], [0.5 * (1 + 1e-14), 1.0]])
    assert QP(Q, [0, 0]).n == 2


def test_lb_above_ub_names_index() -> None:
    with pytest.raises(ProblemError, match=r"lb > ub at index 1"):
        QP(I2, [0, 0], [0.0, 2.0], [1.0, 1.0])


def test_lb_equal_ub_is_fine() -> None:
    assert QP(I2, [0, 0], [1.0, 0.0], [1.0, 1.0]).n == 2


# --- equality feasibility ----------------------------------------------------------------------

A1 = np.array([1.0, 2.0, -1.0])  # over [0, 1]³: aᵀx ranges over [−1, 3]


@pytest.mark.parametrize("b", [3.0, -1.0, 0.0, 1.5])
def test_one_row_equality_feasible_up_to_the_boundary(b: float) -> None:
    assert QP(np.eye(3), np.zeros(3), 0.0, 1.0, A1, b).m == 1


@pytest.mark.parametrize("b", [3.0 + 1e-9, 3.0 + 1e-6, 4.0, -1.0 - 1e-9, -2.0])
def test_one_row_equality_infeasible_just_outside(b: float) -> None:
    with pytest.raises(ProblemError, match=r"A x = b is infeasible.*\[-1\.0, 3\.0\]"):
        QP(np.eye(3), np.zeros(3), 0.0, 1.0, A1, b)


def test_one_row_equality_with_an_open_side_is_always_feasible() -> None:
    assert QP(np.eye(3), np.zeros(3), [0.0, 0.0, 0.0], [1.0, np.inf, 1.0], A1, 1e6).m == 1
    with pytest.raises(ProblemError, match=r"infeasible"):
        QP(np.eye(3), np.zeros(3), [0.0, 0.0, 0.0], [1.0, np.inf, 1.0], A1, -1.5)


def test_svm_form_equality_is_feasible() -> None:
    y = np.array([1.0, -1.0, 1.0, 1.0])
    assert QP(np.eye(4), -np.ones(4), 0.0, 1.0, y, 0.0).m == 1


def test_one_row_equality_all_one_class_infeasible() -> None:
    # yᵀα = 1 with α ≥ 0 is fine, but yᵀα = −1 with all y = +1 is not
    with pytest.raises(ProblemError, match=r"infeasible"):
        QP(np.eye(3), np.zeros(3), 0.0, 1.0, np.ones(3), -1.0)


@pytest.mark.parametrize(("A", "b", "lb", "ub"), [
    ([[1.0, 1.0], [1.0, 1.0]], [1.0, 2.0], -np.inf, np.inf),  # inconsistent rows
    ([[1.0, 0.0], [0.0, 1.0]], [2.0, 0.5], 0.0, 1.0),  # each row alone is out of the box
    ([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], [2.0, 0.0], 0.0, 1.0),  # rows feasible alone, not together
])
def test_multi_row_equality_infeasible(A: Any, b: Any, lb: float, ub: float) -> None:
    n = np.shape(A)[1]
    with pytest.raises(ProblemError, match=r"A x = b is infeasible"):
        QP(np.eye(n), np.zeros(n), lb, ub, A, b)


def test_multi_row_equality_feasible() -> None:
    qp = QP(np.eye(3), np.zeros(3), 0.0, 1.0, [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], [1.5, 1.5])
    assert qp.m == 2


# --- dtypes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["c", "lb", "ub", "b"])
@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([1, 2], dtype=object),
                                   np.array([1 + 0j, 2 + 1j])])
def test_bad_dtype_vectors(field: str, value: Any) -> None:
    kw: dict[str, Any] = {"c": [0.0, 0.0]}
    if field == "b":
        kw["A"] = [[1.0, 0.0], [0.0, 1.0]]
    kw[field] = value
    with pytest.raises(ProblemError, match=rf"^{SUBJECT[field]}: dtype"):
        QP(I2, **kw)


@pytest.mark.parametrize("Q", [np.array([["a", "b"], ["b", "a"]]), np.array([[1, 0], [0, 1]], dtype=object),
                               np.eye(2) * (1 + 1j), None])
def test_bad_dtype_Q(Q: Any) -> None:
    with pytest.raises(ProblemError, match=r"^the Hessian Q: dtype"):
        QP(Q, [0.0, 0.0])


@pytest.mark.parametrize("A", [np.array([["a", "b"]]), np.array([[1j, 1.0]])])
def test_bad_dtype_A(A: Any) -> None:
    with pytest.raises(ProblemError, match=r"^the equality rows A: dtype"):
        QP(I2, [0.0, 0.0], A=A)


def test_integer_and_bool_inputs_are_converted() -> None:
    qp = QP(np.eye(2, dtype=np.int64), np.array([True, False]), 0, 1)
    assert qp.c.dtype == np.float64 and qp.lb.dtype == np.float64


@pytest.mark.parametrize(("Q", "c", "field"), [([[1.0, 0.0], [0.0]], [0.0, 0.0], "Q"),
                                               (np.eye(2), [0.0, [1.0, 2.0]], "c")])
def test_ragged_input(Q: Any, c: Any, field: str) -> None:
    with pytest.raises(ProblemError, match=rf"^{SUBJECT[field]}:"):
        QP(Q, c)


def test_one_row_check_quiet_with_zero_coefficient_on_infinite_bound() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        QP(I2, [0.0, 0.0], -np.inf, np.inf, A=[1.0, 0.0], b=[1.0])


# --- KernelQ inputs ----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_data_nonfinite(bad: float, sparse: bool) -> None:
    X = np.ones((3, 2))
    X[1, 0] = bad
    with pytest.raises(ProblemError, match=r"^the data X:"):
        KernelQ(sp.csr_matrix(X) if sparse else X, Kernel("rbf"))


@pytest.mark.parametrize("X", [np.ones(3), np.array([["a", "b"]]), np.ones((2, 2)) * 1j])
def test_kernel_data_bad_shape_or_dtype(X: Any) -> None:
    with pytest.raises(ProblemError, match=r"^the data X:"):
        KernelQ(X, Kernel("linear"))


@pytest.mark.parametrize("name", ["rbf", "poly", "sigmoid"])
@pytest.mark.parametrize("gamma", [0.0, -1.0, np.nan, np.inf])
def test_kernel_bad_gamma(name: Any, gamma: float) -> None:
    with pytest.raises(ProblemError, match=r"gamma"):
        Kernel(name, gamma=gamma)


@pytest.mark.parametrize(("kwargs", "word"), [({"name": "cosine"}, "unknown kernel"),
                                              ({"name": "poly", "degree": 0}, "degree"),
                                              ({"name": "poly", "degree": 2.5}, "degree"),
                                              ({"name": "sigmoid", "coef0": np.nan}, "coef0")])
def test_kernel_bad_parameters(kwargs: dict[str, Any], word: str) -> None:
    with pytest.raises(ProblemError, match=word):
        Kernel(**kwargs)


@pytest.mark.parametrize("sparse", [False, True])
def test_precomputed_must_be_square(sparse: bool) -> None:
    G = np.ones((3, 4))
    with pytest.raises(ProblemError, match=r"^the data X: a precomputed kernel must be square"):
        KernelQ(sp.csr_matrix(G) if sparse else G, Kernel("precomputed"))


def test_kernel_scale_shape() -> None:
    with pytest.raises(ProblemError, match=r"^scale: shape mismatch"):
        KernelQ(np.ones((3, 2)), Kernel("linear"), scale=[1.0, -1.0])


def test_kernel_negative_cache_budget() -> None:
    with pytest.raises(ProblemError, match=r"^cache_bytes"):
        KernelQ(np.ones((3, 2)), Kernel("linear"), cache_bytes=-1)


@pytest.mark.parametrize("scale", [[1.0, np.nan, 1.0], ["a", "b", "c"]])
def test_kernel_scale_values(scale: Any) -> None:
    with pytest.raises(ProblemError, match=r"^scale:"):
        KernelQ(np.ones((3, 2)), Kernel("linear"), scale=scale)


def test_precomputed_non_symmetric_rejected() -> None:
    with pytest.raises(ProblemError, match=r"symmetric"):
        QP(KernelQ(np.array([[1.0, 2.0], [0.0, 1.0]]), Kernel("precomputed")), [0.0, 0.0])


def test_kernel_q_in_a_qp_takes_its_size() -> None:
    qp = QP(KernelQ(np.random.default_rng(0).normal(size=(5, 2)), Kernel("rbf")), -np.ones(5), 0.0, 1.0)
    assert qp.n == 5


def test_error_messages_are_specific() -> None:
    with pytest.raises(ProblemError) as info:
        QP(I2, [0.0, np.nan])
    assert re.search(r"index 1", str(info.value))


def test_random_box_qp_is_a_valid_problem() -> None:
    qp = random_box_qp(6, seed=0, cond=1e4)
    assert isinstance(qp, QP) and qp.n == 6


def test_undeclared_operator_is_refused_naming_the_contract() -> None:
    class Bare:                     # products, but no declared part of the protocol
        shape = (2, 2)
        stats = qpcore.OperatorStats()

        def matvec(self, x: Any) -> Any:
            return x

        def rows(self, idx: Any) -> Any:
            return np.eye(2)[idx]

        def row(self, i: int) -> Any:
            return np.eye(2)[i]

        def diag(self) -> Any:
            return np.ones(2)

    with pytest.raises(ProblemError, match=r"^the Hessian Q: Bare computes products but does not declare.*Operator"):
        QP(Bare(), [0.0, 0.0])

    class Declared(Operator, Bare):
        pass

    assert QP(Declared(), [0.0, 0.0]).Q.capabilities == frozenset()


# --- messages: one line, the field named in words, what it needs ---------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"A": np.ones((2, 4))}, "the equality rows A: expected shape (m, 5), got (2, 4)"),
    ({"A": [[1.0, 2.0], [1.0, 2.0, 3.0]]}, "the equality rows A: dtype object is not real numeric; pass a float array"),
    ({"A": np.ones(5), "b": [1.0, 2.0]}, "the equality right-hand side b: shape mismatch, expected length 1, got 2"),
    ({"c": np.ones(3)}, "the linear term c: shape mismatch, expected length 5, got 3"),
    ({"lb": [0.0, 0.0, np.nan, 0.0, 0.0]}, "the lower bounds lb: contains NaN at index 2; remove or impute it"),
    ({"C": np.ones((2, 3))}, "the inequality rows C: expected shape (k, 5), got (2, 3)"),
    ({"C": np.ones((1, 5)), "u": [np.nan]}, "the inequality rows' upper sides u: contains NaN at index 0; remove or impute it"),
    ({"Q": np.ones((2, 3))}, "the Hessian Q: not square, shape (2, 3); Q must be n×n"),
])
def test_refusals_name_the_field_in_words(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"Q": np.eye(5), "c": np.ones(5), **kwargs}
    with pytest.raises(ProblemError) as info:
        QP(**args)
    assert str(info.value) == message


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"gamma": "foo"}, "gamma: expected a positive finite number, got 'foo'"),
    ({"gamma": None}, "gamma: expected a positive finite number, got None"),
    ({"name": "linear", "gamma": "foo"}, "gamma: expected a finite number, got 'foo'"),
    ({"name": "poly", "degree": "3"}, "degree: expected an integer ≥ 1, got '3'"),
    ({"name": "rbf", "degree": 2.5}, "degree: expected an integer, got 2.5"),
    ({"coef0": [1.0]}, "coef0: expected a finite number, got [1.0]"),
    ({"name": "sigmoid", "coef0": np.inf}, "coef0: expected a finite number, got inf"),
])
def test_kernel_options_say_what_they_need(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ProblemError) as info:
        Kernel(**kwargs)
    assert str(info.value) == message


def test_kernel_keeps_its_values_as_given() -> None:
    k = Kernel("poly", gamma=np.float64(0.5), degree=2.0, coef0=1)   # type: ignore[arg-type]
    assert (k.gamma, k.degree, k.coef0) == (0.5, 2.0, 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"cache_bytes": "lots"}, "cache_bytes: expected a finite number ≥ 0, got 'lots'"),
    ({"dense_threshold": -0.1}, "dense_threshold: expected a number ≥ 0, got -0.1"),
])
def test_kernel_operator_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ProblemError) as info:
        KernelQ(np.ones((3, 2)), Kernel("linear"), **kwargs)
    assert str(info.value) == message


def test_dense_psd_tolerance_option() -> None:
    with pytest.raises(ProblemError) as info:
        DenseQ(np.eye(2), psd_tol="loose")   # type: ignore[arg-type]
    assert str(info.value) == "psd_tol: expected a finite number ≥ 0, got 'loose'"
