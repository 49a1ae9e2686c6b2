"""Thread safety: shared caches, FFT plans and accountants give the single-threaded answers.

Same library, same machine, same inputs: the answers must be identical to the last bit, so these
tests compare floats exactly.
"""

from __future__ import annotations

import ast
import pathlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.fft

import plda
from plda._internal import fft

SIGMAS = tuple(np.linspace(1.05, 1.2, 8))
DELTA = 1e-5


def _epsilon(sigma: float) -> float:
    accountant = plda.PLDAccountant()
    accountant.step(sigma, 0.01, count=1000)
    return accountant.epsilon(DELTA)


def _run_in_threads(function, arguments, threads: int = 16, repeats: int = 3):
    barrier = threading.Barrier(threads)

    def work(i):
        barrier.wait()  # start together, so the threads really overlap
        return [function(arguments[(i + r) % len(arguments)]) for r in range(repeats)], i

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, range(threads)))


def test_many_accountants_in_many_threads_answer_as_one_thread():
    plda.clear_caches()
    serial = {s: _epsilon(s) for s in SIGMAS}
    plda.clear_caches()
    for answers, i in _run_in_threads(_epsilon, SIGMAS):
        for r, value in enumerate(answers):
            assert value == serial[SIGMAS[(i + r) % len(SIGMAS)]]


def test_fftw_plans_are_per_thread():
    # lengths from fft.SMALL on go through FFTW plans, whose buffers must not be shared
    n = 2 * fft.SMALL
    rng = np.random.default_rng(0)
    signals = [rng.random(n) for _ in range(8)]
    expected = [fft.irfft(fft.rfft(x, n) ** 2, n) for x in signals]

    def square(i):
        return fft.irfft(fft.rfft(signals[i], n) ** 2, n)

    for answers, i in _run_in_threads(square, list(range(8)), repeats=5):
        for r, value in enumerate(answers):
            np.testing.assert_array_equal(value, expected[(i + r) % 8])


def test_the_two_plans_of_one_length_share_buffers_and_stay_exact():
    """The forward and backward plans of one length share two buffers (32 MB saved at two
    million points); interleaved calls, in any order, still give scipy's transforms."""
    if fft.backend() != "pyfftw":
        pytest.skip("no pyFFTW plans")
    n = 2 * fft.SMALL + 6
    rng = np.random.default_rng(1)
    x, y = rng.random(n), rng.random(n - 10)
    spectrum_x = fft.irfft(fft.rfft(x, n), n)  # the backward plan made first this time
    first, second = fft.rfft(x, n), fft.rfft(y, n)
    back = fft.irfft(first * second, n)
    np.testing.assert_allclose(spectrum_x, x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(back, scipy.fft.irfft(scipy.fft.rfft(x) * scipy.fft.rfft(y, n),
                                                     n), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(first, fft.rfft(x, n))  # the output was copied out


def test_shared_accountant_counts_every_step():
    shared = plda.PLDAccountant()
    mechanisms = [plda.PoissonSampled(plda.Gaussian(s), 0.01) for s in (1.0, 1.5)]

    def record(i):
        for _ in range(50):
            shared.compose(mechanisms[i % 2])
        return shared.epsilon(DELTA)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(record, range(16)))
    counts = {}
    for mechanism, count in shared.history:
        counts[mechanism] = counts.get(mechanism, 0) + count
    assert counts == {mechanisms[0]: 400, mechanisms[1]: 400}
    assert len(shared) == 800
    # the answer is the one of an accountant that replays the recorded history serially
    replay = plda.PLDAccountant()
    for mechanism, count in shared.history:
        replay.compose(mechanism, count)
    assert shared.epsilon(DELTA) == replay.epsilon(DELTA)


def test_clearing_caches_while_querying_changes_no_answer():
    plda.clear_caches()
    expected = _epsilon(SIGMAS[0])
    stop = threading.Event()

    def clear():
        # every half millisecond: many clears inside every query, without a spinning thread
        # starving the queries of the interpreter (its duration was 8 to 30 s, by luck)
        while not stop.wait(5e-4):
            plda.clear_caches()

    clearer = threading.Thread(target=clear)
    clearer.start()
    try:
        batches = _run_in_threads(_epsilon, SIGMAS[:1], threads=4)
        answers = [a for batch, _ in batches for a in batch]
    finally:
        stop.set()
        clearer.join()
    assert answers == [expected] * len(answers)


def test_filter_spent_from_threads_admits_exactly_its_budget():
    # a basic-composition filter of epsilon 1 admits exactly 100 steps of 0.01, whichever
    # threads ask: the check and the record happen under one lock
    budget = plda.filters.BasicFilter(epsilon=1.0, delta=0.0)
    admitted = []

    def spend(_):
        ok = 0
        for _ in range(20):
            try:
                budget.spend(epsilon=0.01)
                ok += 1
            except plda.filters.BudgetExceededError:
                pass
        admitted.append(ok)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(spend, range(16)))
    assert sum(admitted) == 100
    assert len(budget.history) == 100


def _group_epsilon(group_size: int) -> float:
    accountant = plda.PLDAccountant()
    accountant.step(1.0, 0.01, count=300, group_size=group_size)
    return accountant.epsilon(DELTA)


def test_groups_in_many_threads_answer_as_one_thread():
    # a group's mixture law, its binomial weights and its discretizations go through the same
    # shared caches (issue 26)
    groups = (2, 3, 4, 6)
    plda.clear_caches()
    serial = {k: _group_epsilon(k) for k in groups}
    plda.clear_caches()
    for answers, i in _run_in_threads(_group_epsilon, groups, threads=8, repeats=2):
        for r, value in enumerate(answers):
            assert value == serial[groups[(i + r) % len(groups)]]


def test_a_shared_matrix_reduction_answers_as_one_thread():
    # a reduction remembers its PLDs and its sensitivity on itself (issue 28): threads sharing
    # one object must see the single-threaded answers
    import plda.matrix as pm

    strategy = pm.toeplitz_strategy([1.0, 0.6, 0.3, 0.1], 64)
    queries = (1e-3, 1e-5, 1e-7)

    def answer(delta, shared):
        return tuple(shared.epsilon_bounds(delta))

    plda.clear_caches()
    fresh = pm.CyclicPoissonBandMF(strategy, 1.0, 0.1)
    serial = {d: answer(d, fresh) for d in queries}
    plda.clear_caches()
    shared = pm.CyclicPoissonBandMF(strategy, 1.0, 0.1)
    for answers, i in _run_in_threads(lambda d: answer(d, shared), queries, threads=8):
        for r, value in enumerate(answers):
            assert value == serial[queries[(i + r) % len(queries)]]


@pytest.mark.parametrize(("family", "count"), [
    (plda.ExponentialMechanism, 200),
    (plda.PermuteAndFlip, 60),  # its realized pairs moved onto a lattice (issue 29)
    (lambda e: plda.ReportNoisyMax(e, noise="laplace"), 60),
    (lambda e: plda.PoissonSampled(plda.Laplace(1.0 / e), 0.1, group_size=3), 30),  # issue 26
])
def test_selections_and_laplace_groups_in_many_threads_answer_as_one_thread(family, count):
    # a step with realized lower pairs of its own goes through the shared caches (issue 29)
    import warnings

    def bounds(epsilon):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.NotTightWarning)
            pld = plda.PrivacyLossDistribution.from_mechanism(family(epsilon), count)
            return tuple(pld.epsilon_bounds(DELTA))

    epsilons = (0.05, 0.1, 0.2)
    plda.clear_caches()
    serial = {e: bounds(e) for e in epsilons}
    plda.clear_caches()
    for answers, i in _run_in_threads(bounds, epsilons, threads=8, repeats=2):
        for r, value in enumerate(answers):
            assert value == serial[epsilons[(i + r) % len(epsilons)]]


# ------------------------------------------------------ no reduction split across BLAS threads
# OpenBLAS splits a long dot product (and a vector-matrix product) among its worker threads, and
# how many it uses depends on what else is running: the rounding then changes in the last bits.
# A grid step is a continuous function of such sums, so one changed bit moved a certified lower
# bound by 1e-14 between threads (CI, stop 32). plda's products go through
# ``plda._internal.floats.dot`` (einsum, on the calling thread, one summation order). Matrix-matrix
# products keep BLAS: it splits rows and columns among threads, never the sum of one entry.
MATRIX_PRODUCTS = {"plda/matrix/gram.py": 1}  # the dense Gram matrix C^T C


def blas_products(source: str) -> int:
    """The ``a @ b`` and ``np.dot``/``np.inner``/``np.vdot``/``np.matmul`` calls in ``source``."""
    found = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in {"dot", "inner", "vdot", "matmul"}
              and isinstance(node.func.value, ast.Name) and node.func.value.id in {"np", "numpy"}):
            found += 1
    return found


def test_no_vector_product_is_handed_to_a_threaded_blas():
    root = pathlib.Path(plda.__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root.parent).as_posix()
        count = blas_products(path.read_text())
        if count and name != "plda/_internal/floats.py":
            found[name] = count
    assert found == MATRIX_PRODUCTS


def test_the_product_scan_sees_every_spelling():
    source = ("import numpy as np\nx = a @ b\ny = np.dot(a, b)\n"
              "z = np.inner(a, b) + numpy.vdot(a, b)\n")
    assert blas_products(source) == 4
    assert blas_products("from plda._internal.floats import dot\nx = dot(a, b)\n") == 0


# ------------------------------------------------------------ one PLD, mixed queries, any order
def test_one_pld_shared_by_threads_asking_different_questions_answers_as_fresh_objects():
    # a query used to start its grid where the last one (of any thread) had ended, so an
    # epsilon query after another thread's delta query came out different in the last bits
    # (CI, stop 32): the grid of a query is now a function of the query alone
    def make():
        step = plda.PoissonSampled(plda.Gaussian(1.0), 0.02)
        return plda.PrivacyLossDistribution.from_mechanism(step, 300)

    questions = [("epsilon_bounds", 1e-6), ("delta_bounds", 0.5), ("epsilon_bounds", 1e-3),
                 ("delta_bounds", 2.0)]
    fresh = {q: tuple(getattr(make(), q[0])(q[1])) for q in questions}
    shared = make()
    results = _run_in_threads(lambda q: (q, tuple(getattr(shared, q[0])(q[1]))), questions,
                              threads=8, repeats=4)
    for answers, _ in results:
        for question, value in answers:
            assert value == fresh[question]


def test_one_accountant_shared_by_threads_asking_different_questions_answers_as_fresh_ones():
    def make():
        accountant = plda.PLDAccountant()
        accountant.step(1.0, 0.02, count=300)
        accountant.step(1.3, 0.01, count=200)
        return accountant

    questions = [("epsilon_bounds", 1e-6), ("delta_bounds", 0.5), ("epsilon_bounds", 1e-3),
                 ("delta_bounds", 2.0), ("epsilon", 1e-5)]
    fresh = {q: getattr(make(), q[0])(q[1]) for q in questions}
    shared = make()
    results = _run_in_threads(lambda q: (q, getattr(shared, q[0])(q[1])), questions,
                              threads=8, repeats=5)
    for answers, _ in results:
        for question, value in answers:
            assert value == fresh[question]
