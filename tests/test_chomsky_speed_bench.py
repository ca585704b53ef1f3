"""bench/chomsky_speed.py's composition of the totals (no timing, no JAX): made-up per-length
figures whose totals are known in closed form."""
import importlib.util
import os

import pytest

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "chomsky_speed.py")
spec = importlib.util.spec_from_file_location("chomsky_speed", PATH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_sampled_lengths_keep_both_ends():
    assert bench.sampled(1, 40, 13) == [1, 14, 27, 40]
    assert bench.sampled(1, 40, 3)[-2:] == [37, 40]
    assert bench.sampled(41, 500, 23) == list(range(41, 479, 23)) + [500]
    assert bench.sampled(41, 500, 92) == [41, 133, 225, 317, 409, 500]


def test_interpolate_is_piecewise_linear_and_flat_beyond_the_ends():
    pts = {1: 1.0, 11: 21.0, 21: 21.0}
    assert bench.interpolate(pts, 6) == pytest.approx(11.0)
    assert bench.interpolate(pts, 16) == pytest.approx(21.0)
    assert bench.interpolate(pts, 0) == 1.0 and bench.interpolate(pts, 40) == 21.0
    assert bench.interpolate({5: 2.0}, 100) == 2.0


def test_curriculum_calls_are_the_steps_and_the_model_init_batch():
    calls = bench.curriculum_calls(10_000)
    assert sum(calls.values()) == 10_001
    assert sorted(calls) == list(range(1, 41))  # 10,000 uniform draws reach all 40 lengths
    assert calls == bench.curriculum_calls(10_000)  # the draw is seeded
    assert bench.curriculum_calls(0) == {10: 1}
    lengths = bench.curriculum_lengths(5_000)
    assert all(1 <= n <= 40 for n in lengths) and 80 < lengths.count(7) < 170  # about 5000 / 40


def test_compose_pays_one_compile_per_length_called_and_steady_per_call():
    # compile(n) = n s and steady(n) = n ms, measured at 1 and 40 only: exact on the line
    compile_pts, steady_pts = {1: 1.0, 40: 40.0}, {1: 0.001, 40: 0.040}
    calls = {3: 100, 7: 0, 20: 5}
    got = bench.compose(calls, compile_pts, steady_pts)
    assert got["compile_s"] == pytest.approx(3 + 20)  # length 7 is never called: no compile
    assert got["steady_s"] == pytest.approx(100 * 0.003 + 5 * 0.020)
    assert got["total_s"] == pytest.approx(23 + 0.4)
    assert got["lengths_called"] == 2 and got["calls"] == 105


def test_compose_without_compiles_is_calls_times_steady():
    steady_pts = {n: 0.5 for n in range(41, 501)}
    got = bench.compose(bench.evaluation_calls(), {}, steady_pts)
    assert got["compile_s"] == 0
    assert got["total_s"] == pytest.approx(460 * 8 * 0.5)
    assert got["calls"] == 3680


def test_an_exact_length_keeps_its_own_compile_and_stays_off_the_curve():
    # length 10 carries the process's first trace (100 s); the others lie on compile = 1 s
    compile_pts = {1: 1.0, 10: 100.0, 40: 1.0}
    steady_pts = {1: 0.0, 40: 0.0}
    calls = {n: 1 for n in range(1, 41)}
    assert bench.compose(calls, compile_pts, steady_pts, exact=(10,))["compile_s"] == pytest.approx(39 + 100)
    # without it the 100 s would spread over lengths 2..39 through the interpolation
    assert bench.compose(calls, compile_pts, steady_pts)["compile_s"] > 500


def test_full_evaluation_composition_matches_closed_form():
    # compile linear from 0.4 s at 41 to 0.5 s at 500; steady 1 ms flat; 8 batches a length
    compile_pts = {41: 0.4, 500: 0.5}
    got = bench.compose(bench.evaluation_calls(), compile_pts, {41: 0.001, 500: 0.001})
    assert got["compile_s"] == pytest.approx(460 * 0.45)  # the mean of a line over evenly spaced points
    assert got["steady_s"] == pytest.approx(3680 * 0.001)


def test_task_rows_compose_theirs_and_ours_and_their_ratios():
    theirs = {"train": {"1": {"compile_s": 1.0, "steady_s": 0.01}, "10": {"compile_s": 5.0, "steady_s": 0.01},
                        "40": {"compile_s": 1.0, "steady_s": 0.01}},
              "eval": {"41": {"compile_s": 2.0, "steady_s": 0.1}, "500": {"compile_s": 2.0, "steady_s": 0.1}},
              "sample_batch": {"40": {"steady_s": 0.02}, "500": {"steady_s": 0.3}}}
    ours = {"train": {str(n): 0.001 for n in range(1, 41)}, "train_block": {str(n): 0.0001 for n in range(1, 41)},
            "eval": {str(n): 0.002 for n in range(41, 501)}, "eval_block": {str(n): 0.001 for n in range(41, 501)},
            "sample_batch": {"40": 0.0001, "500": 0.01}, "warmup_scratch_s": 2.0, "warmup_cached_s": 0.5}
    calls = {1000: bench.curriculum_calls(1000)}
    rows = {r["measure"]: r for r in bench.task_rows("stack-manipulation", theirs, ours, calls)}
    cur = rows["curriculum, 1,000 steps"]
    assert cur["theirs_s"] == pytest.approx(39 * 1.0 + 5.0 + 1001 * 0.01)
    assert cur["ours_s"] == pytest.approx(1001 * 0.001)
    assert cur["ratio"] == pytest.approx(cur["theirs_s"] / cur["ours_s"])
    assert cur["ratio_with_our_scratch_warmup"] == pytest.approx(cur["theirs_s"] / (1001 * 0.001 + 2.0))
    assert cur["ratio_blocks"] == pytest.approx(cur["theirs_s"] / (1001 * 0.0001))
    ev = rows["evaluation, lengths 41-500"]
    assert ev["theirs_s"] == pytest.approx(460 * (2.0 + 8 * 0.1))
    assert ev["ours_s"] == pytest.approx(3680 * 0.002)
    assert rows["sample_batch 128 x 500"]["ratio"] == pytest.approx(30)
    assert rows["sample_batch 128 x 40"]["ratio"] == pytest.approx(200)
    jax_rows = bench.task_rows("parity-check", theirs, ours, calls)
    assert not any(r["measure"].startswith("sample_batch") for r in jax_rows)  # only the Python tasks
