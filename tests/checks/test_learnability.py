import pytest

from diagnostics.checks.data.learnability import check_learnability
from diagnostics.core.result import Status


def figures(given_score, control_score, given_fit, control_fit, *, pretrained=True, chance=0.4):
    return {
        "given": {"score": given_score, "first_train_loss": given_fit[0], "final_train_loss": given_fit[1]},
        "shuffled": {"score": control_score, "first_train_loss": control_fit[0], "final_train_loss": control_fit[1]},
        "chance": chance,
        "train_rows": 96,
        "held_rows": 32,
        "steps": 72,
        "learning_rate": 5e-5,
        "regression": False,
        "pretrained": pretrained,
    }


def test_learnability_held_out_win_passes():
    assert check_learnability(figures(0.9, 0.35, (1.1, 0.1), (1.1, 1.0))).status is Status.PASS


@pytest.mark.parametrize("pretrained, status", [(False, Status.PASS), (True, Status.SKIP)])
def test_learnability_given_labels_fitted_faster_passes_only_on_random_weights(pretrained, status):
    # A pretrained model fits shuffled labels about as fast as real ones, so there a faster fit with held-out rows
    # at or below the majority (44% against 62% on real RTE) is no evidence of signal.
    result = check_learnability(figures(0.41, 0.44, (1.1, 0.30), (1.1, 0.45), pretrained=pretrained))
    assert result.status is status and result.summary.startswith("Inconclusive") is pretrained


@pytest.mark.parametrize("pretrained, status", [(True, Status.SKIP), (False, Status.WARN)])
def test_learnability_nothing_separates_is_inconclusive_on_a_pretrained_model(pretrained, status):
    # Real MNLI at 5e-5 on all-MiniLM-L6-v2: both runs memorise their rows, neither generalises yet.
    result = check_learnability(figures(0.41, 0.44, (1.085, 0.408), (1.094, 0.434), pretrained=pretrained))
    assert result.status is status
    assert ("Inconclusive" in result.summary) is pretrained


# 32 held-out rows and a 37.5% majority: 19 right comes by chance 0.98% of the time, 18 right 2.4% of the time.
@pytest.mark.parametrize("right, status", [(19, Status.PASS), (18, Status.SKIP)])
def test_learnability_boundary_held_out_win_must_be_more_than_chance(right, status):
    result = check_learnability(figures(right / 32, 0.25, (1.1, 1.0), (1.1, 1.0), chance=0.375))
    assert result.status is status


def test_learnability_ten_points_above_the_majority_on_few_rows_is_not_a_win():
    # Shuffled labels on the demo kit (seed 1): 16 of 32 held-out rows right against a 37.5% majority, which random
    # labels reach one time in ten, so the check must not call it signal.
    result = check_learnability(figures(0.5, 0.22, (1.118, 1.069), (1.117, 1.100), pretrained=False, chance=0.375))
    assert result.status is Status.WARN


def test_learnability_binomial_tail():
    from diagnostics.core.chance import chance_of_at_least

    assert chance_of_at_least(0, 32, 0.4) == pytest.approx(1.0)
    assert chance_of_at_least(16, 32, 0.5) == pytest.approx(0.5700, abs=1e-4)
    assert chance_of_at_least(19, 32, 0.375) == pytest.approx(0.0098, abs=1e-4)
