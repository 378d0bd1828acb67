"""``gpulab.check`` grades a learner's kernel against the host reference, and the exercise notebook follows nbgrader.

The nbgrader test makes the student version with nbgrader's own
preprocessors (as ``nbgrader generate_assignment`` does), answers it as a
learner who hard-coded a value, and grades it as ``nbgrader autograde``
does: test cells restored from the source, executed, scored by nbgrader.
"""

from __future__ import annotations

import copy
import os
import re

import numpy as np
import pytest

import gpulab
from gpulab import f32, i32
from gpulab.notebook.warm import kernel_manager
from test_notebooks import NOTEBOOKS_DIR

EXERCISE = NOTEBOOKS_DIR / "09-exercise-relu-and-filter.ipynb"
X = np.array([-1.5, 2.0, -3.0, 4.0], np.float32)


def relu(x: f32) -> f32:
    return x if x > f32(0) else f32(0)


def identity(x: f32) -> f32:
    return x


def largest(a: i32, b: i32) -> i32:
    return a if a > b else b


def positive(x: f32) -> bool:
    return x > f32(0)


def half(x: f32) -> f32:
    return x * f32(0.5)


def test_a_right_answer_passes_against_a_model_solution_or_values():
    checked = gpulab.check(relu, "map", X, relu)
    assert checked and checked.passed and checked.first is None
    assert str(checked) == "passed: map(relu) gives the expected result (4 items)"
    assert gpulab.check(relu, "map", [X], [0, 2, 0, 4])  # given values compare by value
    assert gpulab.check(largest, "reduce", np.arange(10, dtype=np.int32), 9, initial=-1)
    assert gpulab.check(largest, "scan", np.array([3, 1, 4, 1, 5], np.int32), [3, 3, 4, 4, 5])
    checked.assert_passed()


def test_a_wrong_answer_names_the_first_differing_item():
    checked = gpulab.check(identity, "map", X, relu)
    assert not checked and checked.first == 0
    assert checked.message == "map(identity) differs at 2 of 4 items, first at item 0: got -1.5, expected 0.0"
    with pytest.raises(AssertionError, match=r"^failed: map\(identity\) differs at 2 of 4 items"):
        checked.assert_passed()
    assert "#cf222e" in checked._repr_html_() and "&lt;" not in checked._repr_html_()
    kept = gpulab.check(positive, "filter", X, [2.0, 4.0, 5.0])
    assert not kept and kept.message == "filter(positive) gives 2 items, 3 expected (the first 2 match)"
    assert not gpulab.check(largest, "reduce", np.arange(10, dtype=np.int32), 8, initial=-1)


def test_the_kind_of_result_must_match_a_model_solution():
    def as_int(x: f32) -> i32:
        return i32(x)

    checked = gpulab.check(as_int, "map", X, identity)
    assert not checked and checked.message == "map(as_int) gives int32 items where float32 ones are expected"


def test_floats_within_a_tolerance():
    def rounded_half(x: f32) -> f32:
        return x * f32(0.5) + f32(1e-7)

    assert not gpulab.check(rounded_half, "map", X, half)
    assert gpulab.check(rounded_half, "map", X, half, atol=1e-6).message.endswith("within rtol=0, atol=1e-06)")


def test_a_refused_function_fails_with_the_reason_and_runs_nothing(capsys):
    def chatty(x: f32) -> f32:
        print("side effect")
        return x

    checked = gpulab.check(chatty, "map", X, identity)
    assert not checked and checked.got is None
    assert checked.message.startswith("map(chatty) was refused: a kernel may not use `print`")
    assert "side effect" not in capsys.readouterr().out


def forever(x: f32) -> f32:
    while x > f32(-1):
        x = x + f32(1)
    return x


def test_a_learners_loop_that_never_ends_fails_the_check_at_its_time_limit():
    """The issue: `gpulab.check(learner, "map", np.ones(4), model)` never returned, and Ctrl-C was ignored."""
    assert gpulab.check.__kwdefaults__["timeout"] == 10.0
    checked = gpulab.check(forever, "map", np.ones(4, np.float32), identity, timeout=1)
    assert not checked and checked.got is None
    message = str(checked)
    line = forever.__code__.co_firstlineno + 1
    assert message.startswith("failed: map(forever) did not finish: `forever` ran on the host past its time limit "
                              f"of 1 s and was stopped in its loop on line {line}, near item 0")
    assert "gpulab.check(..., timeout=)" in message
    assert gpulab.check(relu, "map", X, relu, timeout=1)  # the next check runs as before


@pytest.mark.parametrize("expected, needle", [
    ([1.0, None, 2.0, 3.0], "not object items such as 1.0"),  # NumPy's TypeError from the comparison before
    (["a", "b", "c", "d"], "not <U1 items such as np.str_('a')"),
    ([[1.0, 2.0], [3.0]], "expected values do not make an array"),  # NumPy's ValueError (inhomogeneous shape)
])
def test_expected_values_that_are_not_numbers_are_the_exercise_s_error(expected, needle):
    """The property test found it: ``check(fn, "map", xs, [1.0, None, 2.0])`` raised a TypeError of NumPy's."""
    with pytest.raises(gpulab.errors.ArgumentError, match=re.escape(needle)):
        gpulab.check(relu, "map", X, expected)


@pytest.mark.parametrize("options, needle", [({"rtol": "x"}, "rtol= is a finite number, 0 or more, not 'x'"),
                                             ({"atol": -1.0}, "atol= is a finite number, 0 or more, not -1.0")])
def test_tolerances_are_finite_numbers(options, needle):
    with pytest.raises(gpulab.errors.ArgumentError, match=re.escape(needle)):
        gpulab.check(relu, "map", X, relu, **options)


def test_a_broken_model_solution_is_the_exercise_s_error():
    def impure(x: f32) -> f32:
        return open(x)

    with pytest.raises(gpulab.errors.ImpureKernelError):
        gpulab.check(relu, "map", X, impure)


# ---------------------------------------------------------------- the exercise notebook, as nbgrader grades it

nbformat = pytest.importorskip("nbformat")
preprocessors = pytest.importorskip("nbgrader.preprocessors")
from nbclient import NotebookClient  # noqa: E402
from nbgrader.utils import determine_grade, is_grade, is_solution  # noqa: E402

# What a learner might hand in: relu right, the predicate with the visible test's limit written in.
ANSWERS = {"relu": "return x if x > f32(0) else f32(0)", "above": "return x > f32(0.5)"}


def student_version(source):
    """What ``nbgrader generate_assignment`` gives learners: solutions stubbed, hidden tests gone."""
    student = copy.deepcopy(source)
    for step in (preprocessors.ClearSolutions(), preprocessors.ClearHiddenTests(), preprocessors.ClearOutput()):
        student, _ = step.preprocess(student, {})
    return student


def answer(student):
    """Fill each solution cell's stub with the learner's code."""
    answered = copy.deepcopy(student)
    for cell in answered.cells:
        if is_solution(cell) and cell.cell_type == "code":
            grade_id = cell.metadata.nbgrader.grade_id
            cell.source = "\n".join(line.replace("raise NotImplementedError()", ANSWERS[grade_id])
                                    for line in cell.source.splitlines() if line.strip() != "# YOUR CODE HERE")
    return answered


def autograde(answered, source):
    """As ``nbgrader autograde``: test cells from the source, run, then each grade cell's points."""
    tests = {c.metadata.nbgrader.grade_id: c for c in source.cells if is_grade(c)}
    graded = copy.deepcopy(answered)
    graded.cells = [copy.deepcopy(tests[c.metadata.nbgrader.grade_id]) if is_grade(c) else c for c in graded.cells]
    NotebookClient(graded, km=kernel_manager(), timeout=300, allow_errors=True,
                   resources={"metadata": {"path": str(EXERCISE.parent)}}).execute(
        env={**os.environ, "GPULAB_CACHE_DIR": os.environ["GPULAB_CACHE_DIR"]})
    return graded, {c.metadata.nbgrader.grade_id: determine_grade(c) for c in graded.cells if is_grade(c)}


def test_the_exercise_follows_nbgrader_and_its_hidden_tests_catch_a_hard_coded_limit():
    source = nbformat.read(EXERCISE, as_version=4)
    student = student_version(source)
    text = "\n".join(cell.source for cell in student.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text and "model_relu" not in text
    stubs = [c for c in student.cells if c.cell_type == "code" and "raise NotImplementedError()" in c.source]
    assert [c.metadata.nbgrader.grade_id for c in stubs] == ["relu", "above"]

    graded, points = autograde(answer(student), source)
    assert points == {"relu-tests": (1.0, 1.0), "above-tests": (0.0, 2.0)}
    failed = next(c for c in graded.cells if is_grade(c) and c.metadata.nbgrader.grade_id == "above-tests")
    error = next(o for o in failed.outputs if o.output_type == "error")
    assert error.ename == "AssertionError" and error.evalue.startswith("failed: filter(above) differs")

