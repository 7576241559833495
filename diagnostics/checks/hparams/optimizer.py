"""hparams.optimizer: the optimizer Keras builds, each setting set or left at its default."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from diagnostics.config.run import RunConfig, usual_rate
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.fixes import RateFix
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, All, Holds, Not
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.training import build_optimizer, head_only, is_pretrained


def optimizer_settings(config: RunConfig) -> dict[str, Any]:
    """The optimizer Keras builds from the configuration (the user's own, when the pipeline is their code), each setting
    marked as set or left at its default."""
    from diagnostics.keras.optimizers import ignored_keywords, optimizer_settings_of

    optimizer = config.user_optimizer if config.user_optimizer is not None else build_optimizer(config)
    settings = optimizer_settings_of(optimizer)
    defaults = optimizer_settings_of(type(optimizer)())
    # A configuration names what it sets; the user's own optimizer shows it by differing from the class's defaults.
    explicit = {name for name, value in settings.items() if defaults.get(name, object()) != value} \
        if config.user_optimizer is not None else {
        "adam": set(),
        "Adam": {"learning_rate"},
        "AdamW": {"learning_rate", "weight_decay"},
        "create_optimizer": {"learning_rate", "weight_decay_rate"},
    }[config.optimizer]
    rows = []
    for name, value in settings.items():
        if name in ("name", "is_legacy_optimizer"):
            continue
        if isinstance(value, dict):  # a schedule (create_optimizer)
            shown = msg("{schedule} peaking at {rate:g}", schedule=value.get("class_name", "schedule"),
                        rate=config.learning_rate)
        elif isinstance(value, (np.floating, float)):
            shown = f"{float(value):g}"
        else:
            shown = str(value)
        rows.append({
            "setting": name,
            "value": shown,
            "source": msg("set") if name in explicit else (
                msg("Keras default") if defaults.get(name) == value else msg("library")),
        })
    rate = float(settings["learning_rate"]) if not isinstance(settings["learning_rate"], dict) else config.learning_rate
    ignored = ignored_keywords(optimizer) if config.user_optimizer is not None else {}
    return {"class": type(optimizer).__name__, "given_as": config.optimizer_shown, "learning_rate": rate,
            "settings": rows, "other_optimizer": config.optimizer == "other",
            "ignored": {name: float(value) if isinstance(value, (int, float, np.floating)) else _shown(value)
                        for name, value in ignored.items()}, "ignored_keyword": bool(ignored)}


def _shown(value) -> str:
    """A dropped keyword's value that is not a number, as the script wrote it in short: a schedule object by its
    class (`Warmup(...)`), never its repr with a memory address."""
    if isinstance(value, (str, bool)) or value is None:
        return repr(value)
    return f"{type(value).__name__}(...)"


def optimizer_summary(figures: dict[str, Any]) -> Text:
    """What the optimizer is: its class, rate, the settings chosen and those left at Keras's defaults."""
    defaulted = [row["setting"] for row in figures["settings"] if row["source"] == "Keras default"]
    chosen = [f"{row['setting']}={row['value']}" for row in figures["settings"]
              if row["source"] == "set" and row["setting"] != "learning_rate"]
    values = dict(optimizer=figures["class"], rate=figures["learning_rate"], count=len(defaulted),
                  chosen=msg(", {settings}", settings=", ".join(chosen)) if chosen else "",
                  settings=", ".join(defaulted[:4]) + (", ..." if len(defaulted) > 4 else ""))
    if figures["given_as"] == figures["class"]:  # given as the class itself: "Adam builds Adam" says nothing
        return msg("The optimizer is {optimizer} with learning rate {rate:g}{chosen}; {count} settings are Keras "
                   "defaults ({settings}).", **values)
    given = msg("The string 'adam'") if figures["given_as"] == "adam" else figures["given_as"]
    return msg("{given} builds {optimizer} with learning rate {rate:g}{chosen}; {count} settings are Keras defaults "
               "({settings}).", given=given, **values)


def check_optimizer(figures: dict[str, Any], *, pretrained: bool = True, frozen_encoder: bool = False) -> CheckResult:
    """The effective optimizer; warn when it was given as a string (every setting silently defaulted) or when
    the learning rate is too high for fine-tuning a pretrained transformer.

    Args:
        pretrained: False for a checkpoint with random weights (the demo kit), where the rate rule does not apply.
        frozen_encoder: the pretrained encoder is frozen (`training.head_only`): the fit trains a new head, and the
            rate rule for pretrained weights does not apply either.
    """
    figures = {**figures, "pretrained": pretrained and not frozen_encoder, "head_only": frozen_encoder,
               "string_adam": figures["given_as"] == "adam"}
    # What the rules below read into the rate is a rule of thumb: hparams.lr_sweep measures the rate, and once it has,
    # this finding points there (`registry.CAUSES`) and is said without its reading.
    return judge(CHECK, figures, usual=usual_rate(pretrained and not frozen_encoder, frozen_encoder))


def _string_adam(e, f) -> tuple:
    """(finding, fix) for an optimizer given as the string 'adam': the rate it hides, and what it means here."""
    reading = msg(", above the {limit:g} a pretrained transformer tolerates", limit=CHECK.value("warn_learning_rate")) \
        if e["pretrained"] else msg(", whatever this fit needs")
    return (msg("{summary} The string hides its learning rate: 'adam' always means {rate:g}{reading}.",
                summary=optimizer_summary(e), rate=e["learning_rate"], reading=reading),
            RateFix(f.usual))


def _ignored_keyword(e, f) -> tuple:
    """(finding, fix) for a keyword the optimizer dropped (`Adam(lr=1e-5)` trains at Adam's default rate)."""
    from importlib.metadata import version

    from diagnostics.keras.optimizers import IGNORED_KEYWORDS

    name, value = next(iter(e["ignored"].items()))
    given = f"{value:g}" if isinstance(value, float) else value
    return (msg("{optimizer}({keyword}={value}) does not set the rate: tf-keras {version} drops the keyword {keyword}= "
                "with only a logged warning, so the optimizer trains at {rate:g}, not at the {value} the script "
                "wrote.", optimizer=e["class"], keyword=name, value=given, version=version("tf-keras"),
                rate=e["learning_rate"]),
            f"{e['class']}({IGNORED_KEYWORDS[name]}={given})")


def measure(run: RunContext) -> CheckResult:
    model = run.classifier[0]
    return check_optimizer(optimizer_settings(run.config), pretrained=is_pretrained(model),
                           frozen_encoder=head_only(model))


# Functional form: "class" is a keyword. settings: setting, value, source of each optimizer setting.
# ignored: the keywords the optimizer was given and dropped ({"lr": 1e-05}).
Evidence = TypedDict("Evidence", {"settings": Rows, "class": str, "learning_rate": float, "given_as": str,
                                    "pretrained": bool, "head_only": bool, "string_adam": bool, "ignored": dict,
                                    "ignored_keyword": bool, "other_optimizer": bool}, total=False)


CHECK = Check("hparams.optimizer", N_("the optimizer Keras builds, each setting set or left at its default"),
              unit="setup", measure=measure, conditions=(
    # Judged in this order.
    Condition("ignored_keyword", None, "fail when the optimizer was given a keyword it drops (tf-keras takes lr= and "
                                       "trains at its default rate)", Holds("ignored_keyword"), status="fail",
              says=_ignored_keyword),
    Condition("string_adam", None, "warn when the optimizer is given as the string 'adam' (every setting, the rate "
                                   "1e-3 included, silently a Keras default)", Holds("string_adam"),
              says=_string_adam),
    Condition("head_only", None, "pass any rate on a fit that trains only a head on a frozen "
                                 "pretrained encoder: the ceiling is for pretrained weights, "
                                 "and the sweep measures the rest", Holds("head_only"),
              status="pass", says=lambda e, f: (
                  msg("{summary} This fit trains only the head (the pretrained encoder is frozen), so the {limit:g} "
                      "ceiling for fine-tuning pretrained weights does not apply; the sweep measures the rate.",
                      summary=optimizer_summary(e), limit=CHECK.value("warn_learning_rate")), None)),
    Condition("random_weights", None, "pass any rate on a checkpoint with random weights (the demo kit): the ceiling "
                                      "is for pretrained ones, and the sweep measures the rest",
                                      Holds("pretrained", False),
              status="pass", says=lambda e, f: (
                  msg("{summary} This checkpoint has random weights (the demo kit), so the 1e-4 ceiling for "
                      "pretrained transformers does not apply; the sweep shows which rates work.",
                      summary=optimizer_summary(e)), None)),
    Condition("other_optimizer", None, "pass any rate of an optimizer other than Adam's family (SGD, RMSprop...): "
                                       "the ceiling is for Adam's steps, and the sweep measures the rest",
              Holds("other_optimizer"), status="pass", says=lambda e, f: (
                  msg("{summary} The {limit:g} ceiling is for Adam's steps on pretrained weights; a {optimizer} step "
                      "at the same rate is another size, so the sweep measures the rate.",
                      summary=optimizer_summary(e), limit=CHECK.value("warn_learning_rate"), optimizer=e["class"]),
                  None)),
    Condition("warn_learning_rate", 1e-4, "warn when a pretrained checkpoint is fine-tuned above this rate",
              Above("learning_rate"), says=lambda e, f: (
                  msg("{summary} {rate:g} is above {limit:g}{reading}.", summary=optimizer_summary(e),
                      rate=e["learning_rate"], limit=CHECK.value("warn_learning_rate"),
                      reading=msg(": fine-tuning a pretrained transformer at this rate tends to wreck its weights")),
                  RateFix(f.usual))),
    ), otherwise_says=lambda e, f: optimizer_summary(e), evidence=Evidence)

# The cause this check owns (`Cause.precedence`): the rate the script wrote never reached the optimizer, so what the
# rate's measurements find at the rate it trains at follows from it.
CAUSES = (
    Cause("ignored_keyword", "hparams.optimizer", ("ignored_keyword",), N_("a keyword the optimizer ignores"), (
        Explains("hparams.lr_sweep", ("broke", "fail_drift", "too_high", "warn_decades")),
        Explains("model.weights_after_step", ("non_finite_weights",)),
        Explains("model.nan_origin", ("non_finite_layer",), Holds("after_step")),
        Explains("overfit.one_batch", (), Holds("at_configured_rate")),
    ), precedence=85),
    # The string's hidden rate, where the sweep does not flag it: its fix is the sweep's rate, so an overfit test that
    # crawled at that rate is the same cause, said once here, not a second cause with the same rate.
    Cause("string_rate", "hparams.optimizer", ("string_adam",), N_("the rate a string optimizer hides"), (
        Explains("overfit.one_batch", (), All((Holds("at_configured_rate"), Not(Holds("rate_swept_fine"))))),
    ), precedence=87),
)
