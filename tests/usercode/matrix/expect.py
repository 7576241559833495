"""What a trace of a matrix script must say: a healthy script passes clean (the findings its shape truly has, and no
other); a script with one injected bug names it once, by its owner, and nothing else fails."""

from __future__ import annotations

from tests.usercode.matrix.shapes import BUGS, Shape

# The checks that train copies for many steps, the same work whatever the script's shape.
LONG_RUNS = "data.learnability,hparams.lr_sweep,hparams.lr_range_test,overfit.one_batch"


# The axes that change what the long runs train and judge (the model and its head, the labels, the loss, the
# optimizer, how training runs, the strategy, the precision). How the batches arrive (the inputs' form, the data
# pipeline) is read back into the same batches before they run, so it is covered by every script's short checks.
LONG_RUN_AXES = ("model", "labels", "compile", "optimizer", "training", "strategy", "precision")


def long_run_cost(shape: Shape) -> float:
    """About what a shape's long runs cost, against one fit in float32: a second checked fit runs them again, and
    mixed_float16 on a CPU computes in emulated half precision (measured on the matrix, 2026-11-27: 29 to 32 s for
    the two shapes with both, 15 to 19 s for the others)."""
    return (2.0 if shape.training == "two_fits" else 1.0) * (1.6 if shape.precision == "mixed_float16" else 1.0)


def with_long_runs(shapes: list[Shape]) -> list[Shape]:
    """A few shapes, chosen greedily, so that each value of each axis in LONG_RUN_AXES is in one that runs
    LONG_RUNS (the long runs cost a trace several times its short checks): each pick the shape that adds the most
    values not yet covered, the cheaper (`long_run_cost`) of those that add as many."""
    from tests.usercode.matrix.shapes import AXES

    wanted = {(axis, value) for axis in LONG_RUN_AXES for value in AXES[axis]}
    wanted &= {(axis, getattr(shape, axis)) for shape in shapes for axis in LONG_RUN_AXES}
    chosen: list[Shape] = []
    while wanted:
        best = max(shapes, key=lambda shape: (len({(axis, getattr(shape, axis)) for axis in LONG_RUN_AXES} & wanted),
                                              -long_run_cost(shape)))
        chosen.append(best)
        wanted -= {(axis, getattr(best, axis)) for axis in LONG_RUN_AXES}
    return chosen


def each_value_once(shapes: list[Shape], long: list[Shape]) -> list[Shape]:
    """The default tier's slice of the healthy matrix: a few shapes, chosen greedily, that hold every value of every
    axis between them (the full tier traces all of them, every pair): each pick adds the most values not yet held,
    of those that add as many one whose trace runs only the short checks (not in `long`, the shapes that run the
    long runs too), then the cheaper (`long_run_cost`)."""
    from tests.usercode.matrix.shapes import AXES

    wanted = {(axis, getattr(shape, axis)) for shape in shapes for axis in AXES}
    chosen: list[Shape] = []
    while wanted:
        best = max(shapes, key=lambda shape: (len({(axis, getattr(shape, axis)) for axis in AXES} & wanted),
                                              shape not in long, -long_run_cost(shape)))
        chosen.append(best)
        wanted -= {(axis, getattr(best, axis)) for axis in AXES}
    return chosen


def each_bug_once(shapes: list[Shape]) -> list[Shape]:
    """The default tier's slice of the bugged matrix: for each bug, the cheapest (`long_run_cost`) of the shapes it
    was drawn into, the first of those as cheap."""
    return [min((shape for shape in shapes if shape.bug == bug), key=long_run_cost)
            for bug in dict.fromkeys(shape.bug for shape in shapes)]


# What a trace with each bug runs: the owner's stage and every check that could name the bug again (the Model stage's
# findings it explains, the loss, the overfit test at the configured rate), without the long runs that neither own
# nor meet it (learnability, the range test; the sweep, for bugs that are not the rate). (stages, skip)
BUG_CHECKS: dict[str, tuple[str, str | None]] = {
    "rate": ("model,hparams,overfit", None),  # the range test runs with the sweep (one unit)
    "stray_label": ("data,model,hparams", "data.learnability,hparams.lr_sweep,hparams.lr_range_test"),
    "from_logits": ("data,model,hparams", "data.learnability,hparams.lr_sweep,hparams.lr_range_test"),
    "small_head": ("data,model,hparams", "data.learnability,hparams.lr_sweep,hparams.lr_range_test"),
    "labels_in_dict_keras_loss": ("data,model,hparams", "data.learnability,hparams.lr_sweep,hparams.lr_range_test"),
}


def true_findings(shape: Shape) -> set[str]:
    """Checks a healthy script of this shape rightly warns on: a Transformers classifier given input_ids alone, padded,
    attends to the padding (`data.columns`); the string 'adam' hides its rate, whatever it is (`hparams.optimizer`,
    the course's lesson, on every checkpoint)."""
    found = set()
    if shape.inputs == "ids_only" and shape.model == "classifier":
        found.add("data.columns")
    if shape.optimizer == "string":
        found.add("hparams.optimizer")
    return found


def fits_of(report: dict) -> list[dict]:
    return [report, *(report.get("later_fits") or [])]


def not_passing(fit: dict) -> dict[str, tuple[str, str]]:
    """{check id: (status, summary)} of the checks that neither pass nor skip."""
    return {check["id"]: (check["status"], check["summary"]) for check in fit.get("checks", [])
            if check["status"] not in ("pass", "skip")}


def problems_healthy(shape: Shape, outcome: dict) -> list[str]:
    """What is wrong with a healthy script's trace, in words (empty when it is right)."""
    found = _ran(outcome)
    if found:
        return found
    report = outcome["report"]
    allowed = true_findings(shape)
    problems = _raised_after(outcome)
    for number, fit in enumerate(fits_of(report), 1):
        for check, (status, summary) in not_passing(fit).items():
            if check in allowed and status == "warn":
                continue
            problems.append(f"fit {number}: {status} {check}: {summary}")
        for check in fit.get("checks", []):
            if check["status"] == "skip" and not check["summary"].strip():
                problems.append(f"fit {number}: {check['id']} skipped without saying why")
    return problems


def problems_bugged(shape: Shape, outcome: dict) -> list[str]:
    """What is wrong with a bugged script's trace: the fit that carries the bug (the last checked one) must name it
    as a cause owned by its owner, once; no other check may fail or warn of its own."""
    found = _ran(outcome)
    if found:
        return found
    owner = BUGS[shape.bug]
    fit = fits_of(outcome["report"])[-1]
    causes = fit.get("causes", [])
    owners = [cause.get("owner") or cause.get("check") for cause in causes]
    problems = []
    if owners.count(owner) != 1:
        problems.append(f"{owner} should own exactly one cause, causes are owned by {owners}: "
                        f"{[cause.get('summary') for cause in causes]}")
    allowed = {owner, *true_findings(shape)}
    explained = {check["id"] for check in fit.get("checks", []) if check.get("explained_by")}
    for check, (status, summary) in not_passing(fit).items():
        if check not in allowed and check not in explained:
            problems.append(f"{status} {check} of its own: {summary}")
    return problems


def _ran(outcome: dict) -> list[str]:
    if outcome["crash"]:
        return [f"the tracer crashed: {outcome['crash']}"]
    report = outcome["report"]
    if report is None:
        return ["no report was written"]
    script = report.get("script") or {}
    error = script.get("error")
    if not script.get("reached_fit"):
        return [f"the script stopped before fit: {error.get('type')}: {error.get('message')}" if error else
                "the script never reached fit"]
    return []


def _raised_after(outcome: dict) -> list[str]:
    """A healthy script's own run after the checks (each fit's two steps) raises nothing."""
    error = (outcome["report"].get("script") or {}).get("error")
    return [f"the script raised after the checks: {error.get('type')}: {error.get('message')}"] if error else []
