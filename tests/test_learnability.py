import pytest

from diagnostics.learnability import check_learnability
from diagnostics.result import Status


def figures(given_score, control_score, given_fit, control_fit, *, pretrained=True, chance=0.4):
    return {"given": {"score": given_score, "first_train_loss": given_fit[0], "final_train_loss": given_fit[1]},
            "shuffled": {"score": control_score, "first_train_loss": control_fit[0], "final_train_loss": control_fit[1]},
            "chance": chance, "train_rows": 96, "held_rows": 32, "steps": 72, "learning_rate": 5e-5,
            "regression": False, "pretrained": pretrained}


def test_learnability_held_out_win_passes():
    assert check_learnability(figures(0.9, 0.35, (1.1, 0.1), (1.1, 1.0))).status is Status.PASS


def test_learnability_given_labels_fitted_faster_passes_with_held_out_inconclusive():
    result = check_learnability(figures(0.41, 0.44, (1.1, 0.30), (1.1, 0.45)))
    assert result.status is Status.PASS and "fitted faster" in result.summary


@pytest.mark.parametrize("pretrained, status", [(True, Status.SKIP), (False, Status.WARN)])
def test_learnability_nothing_separates_is_inconclusive_on_a_pretrained_model(pretrained, status):
    # Real MNLI at 5e-5 on all-MiniLM-L6-v2: both runs memorise their rows, neither generalises yet.
    result = check_learnability(figures(0.41, 0.44, (1.085, 0.408), (1.094, 0.434), pretrained=pretrained))
    assert result.status is status
    assert ("Inconclusive" in result.summary) is pretrained


def test_learnability_boundary_gain_of_exactly_ten_points_passes():
    assert check_learnability(figures(0.55, 0.45, (1.1, 1.0), (1.1, 1.0), chance=0.45)).status is Status.PASS
