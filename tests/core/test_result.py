import math

import numpy as np

from diagnostics.core.result import CheckResult, Status, run_check, to_json
from diagnostics.walk.causes import worst_first


def _boom():
    raise KeyError("labels")


def test_run_check_exception_becomes_error_result():
    result = run_check("data.columns", "data", _boom)
    assert result.status is Status.ERROR
    assert "KeyError" in result.summary and "labels" in result.summary
    assert result.evidence["exception"] == "KeyError"


def test_run_check_passes_result_through():
    expected = CheckResult("data.batch", "data", Status.PASS, "fine")
    assert run_check("data.batch", "data", lambda: expected) is expected


def test_to_json_turns_non_finite_and_numpy_into_plain_values():
    converted = to_json({"a": np.float32(1.5), "b": [np.int64(2), math.nan, np.inf], "c": np.array([1, 2])})
    assert converted == {"a": 1.5, "b": [2, None, None], "c": [1, 2]}


def test_worst_first_orders_by_status_then_stage():
    results = [
        CheckResult("model.forward", "model", Status.PASS, ""),
        CheckResult("data.batch", "data", Status.WARN, ""),
        CheckResult("model.nan_rows", "model", Status.FAIL, ""),
        CheckResult("data.label_range", "data", Status.FAIL, ""),
    ]
    ordered = [r.id for r in worst_first(results, ("data", "model"))]
    assert ordered == ["data.label_range", "model.nan_rows", "data.batch", "model.forward"]
