"""The generator of the matrix of script shapes: every valid pair of axis values is in some script, and every
script it writes is Python."""

import itertools

import pytest

from tests.usercode.matrix.shapes import AXES, BUGS, all_pairs, bugged, completable, valid, write_script

SHAPES = all_pairs()


def test_every_valid_pair_of_axis_values_is_in_some_script():
    names = list(AXES)
    covered = {frozenset({(a, getattr(shape, a)), (b, getattr(shape, b))})
               for shape in SHAPES for a, b in itertools.combinations(names, 2)}
    # Every pair some complete script can hold (a pair each of whose values fits the other may still fit no third).
    wanted = {frozenset({(a, x), (b, y)}) for a, b in itertools.combinations(names, 2) for x in AXES[a]
              for y in AXES[b] if valid({a: x, b: y}) and completable({a: x, b: y}, AXES, valid)}
    assert wanted <= covered
    assert len(wanted) > 300
    assert all(valid({axis: getattr(shape, axis) for axis in names}) for shape in SHAPES)
    assert 30 <= len(SHAPES) <= 60


@pytest.mark.parametrize("bug", [None, *BUGS])
def test_every_script_the_generator_writes_is_python(bug):
    for shape in SHAPES:
        compile(write_script(shape.with_bug(bug) if bug else shape, rate=3e-3), shape.name, "exec")


def test_every_bug_is_drawn_and_only_into_a_shape_it_applies_to():
    from tests.usercode.matrix.shapes import applies

    drawn = bugged(SHAPES)
    assert {shape.bug for shape in drawn} == set(BUGS)
    assert all(applies(shape, shape.bug) for shape in drawn)


def test_the_default_tiers_slice_holds_every_axis_value_and_each_bug():
    """The default tier traces a slice of the matrix (the full tier all of it): every value of every axis is in one
    of its healthy scripts, and every bug in one of its bugged scripts."""
    from tests.usercode.matrix.expect import each_bug_once, each_value_once, with_long_runs

    healthy = each_value_once(SHAPES, with_long_runs(SHAPES))
    assert {(axis, getattr(shape, axis)) for shape in healthy for axis in AXES} == \
        {(axis, value) for axis, values in AXES.items() for value in values}
    assert len(healthy) < len(SHAPES) / 3
    drawn = bugged(SHAPES)
    assert sorted(shape.bug for shape in each_bug_once(drawn)) == sorted(BUGS)
