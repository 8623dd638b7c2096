"""The benchmark fit's linear algebra (roofline/cases/fit.py) is written in plain floats so that
every machine gets the same fit: OpenBLAS picks its kernels by the CPU, and a last-bit difference
in one Levenberg–Marquardt step moved the documented fit's cpu_step from 2,497 to 2,518 µs
between an AMD Zen and an Intel Skylake-X machine. These check the helpers against the textbook
definitions (numpy's BLAS/LAPACK within rounding) and the determinism they exist for."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.cases import fit

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def square(n: int, cols: int) -> st.SearchStrategy[list[list[float]]]:
    return st.lists(st.lists(finite, min_size=cols, max_size=cols), min_size=n, max_size=n)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.data())
def test_solve_inverts_a_well_conditioned_matrix(n, data):
    """Diagonally dominant (so well conditioned): a x = b within 1e-9 relative."""
    a = np.array(data.draw(square(n, n)))
    a += np.diag(np.abs(a).sum(axis=1) + 1.0)
    b = np.array(data.draw(square(n, 2)))
    x = fit._solve(a, b)
    scale = np.abs(a).sum() * (np.abs(x).max() + 1.0)
    assert np.all(np.abs(a @ x - b) <= 1e-9 * scale)


def test_solve_refuses_a_singular_matrix():
    import pytest

    with pytest.raises(np.linalg.LinAlgError):
        fit._solve(np.array([[1.0, 2.0], [2.0, 4.0]]), np.eye(2))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite, finite, finite), min_size=1, max_size=12))
def test_products_are_correctly_rounded_sums(rows):
    """Each entry is math.fsum of the exact products' roundings, whatever order BLAS would use:
    [1e16, 1, -1e16] · [1, 1, 1] is 1 here, where a left-to-right sum gives 0."""
    a = np.array(rows)
    assert fit._dot(np.array([1e16, 1.0, -1e16]), np.ones(3)) == 1.0
    g = fit._gram(a)
    for i in range(3):
        for j in range(3):
            assert g[i, j] == math.fsum(float(a[k, i] * a[k, j]) for k in range(len(a)))
    v = np.arange(3.0)
    assert list(fit._matvec(a, v)) == [
        math.fsum(float(x * y) for x, y in zip(r, v, strict=True)) for r in a
    ]


def test_the_fit_calls_no_blas():
    """No matrix product or LAPACK call crept back into the fit (a planted `jac @ dz` fails):
    its products and solves are the helpers above."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(fit))
    matmul = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.BinOp | ast.AugAssign)
              and isinstance(n.op, ast.MatMult)]  # fmt: skip
    calls = [
        ast.unparse(n.func)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    ]
    lapack = [
        c
        for c in calls
        if (".linalg." in c and not c.endswith("LinAlgError"))  # (the refusal raises numpy's own)
        or c.split(".")[-1] in ("dot", "matmul", "inner")
    ]
    assert not matmul and not lapack, (matmul, lapack)
