"""Rendering of check results: status badges, the checklist, and the stage runner with clear errors."""

from __future__ import annotations

from typing import Callable

import streamlit as st

from diagnostics.walk.causes import Found
from diagnostics.core.errors import InputError
from diagnostics.i18n import _, localize, message_of
from diagnostics.walk.registry import CHECKS
from diagnostics.core.check import STAGE_ORDER, STAGE_TITLES
from diagnostics.report.escape import folded_code, markdown_text  # noqa: F401  (the pages' escape)
from diagnostics.report.formats import EXPLAINED_MARK, PENDING_MARK, STATUS_MARKS, causes_headline, fix_is_code
from diagnostics.core.result import CheckResult, Status, pending
from diagnostics.walk.causes import worst_first

STATUS_ICONS = {
    Status.PASS: ":material/check_circle:",
    Status.WARN: ":material/warning:",
    Status.FAIL: ":material/cancel:",
    Status.ERROR: ":material/bug_report:",
    Status.SKIP: ":material/skip_next:",
}

# The keys of widgets that show their choices through labels in the page's language (`choice`). The browser keeps
# such a widget's label, not its value, and sends it back on the next run: after a language change it would send a
# label the new language does not have, and Streamlit would hand that label on as the value (a scenario named
# '(нет)', a data source that is no source). The run that changes the language sets each from the session instead
# (`session.apply_language`).
CHOICE_KEYS: set[str] = set()


def choice(key: str) -> str:
    """A widget key whose choices are shown through translated labels (see `CHOICE_KEYS`); returns the key."""
    CHOICE_KEYS.add(key)
    return key


def shown(value) -> str:
    """A sentence for a Markdown element (st.markdown, st.error, st.warning, ...): in the page's language, with
    every value it was filled with escaped (`markdown_text`); the sentence's own formatting stays."""
    return localize(value, escape=markdown_text)


STATUS_COLOURS = {
    Status.PASS: "green",
    Status.WARN: "orange",
    Status.FAIL: "red",
    Status.ERROR: "violet",
    Status.SKIP: "gray",
}
# Each stage's page, where a cause's owner lives.
STAGE_PAGES = {"data": "app_pages/1_data.py", "model": "app_pages/2_model.py",
               "hparams": "app_pages/3_hyperparameters.py", "overfit": "app_pages/4_overfit.py"}


def badge(status: Status) -> str:
    return f":{STATUS_COLOURS[status]}-badge[{STATUS_ICONS[status]} {_(STATUS_MARKS[status])}]"


def pending_badge() -> str:
    """The mark of a check that has not run yet (runs only when asked for, or its owner's page has not run)."""
    return f":blue-badge[:material/pending: {_(PENDING_MARK)}]"


def explained_badge() -> str:
    """The mark of a finding another check's cause explains (not counted as a failure of its own)."""
    return f":gray-badge[:material/arrow_forward: {_(EXPLAINED_MARK)}]"


def owner_link(owner: str, where=st, *, ran: bool = True, page: str | None = None) -> None:
    """A link to the page where the check owning a cause lives (`ran=False`: that check has not run yet, so the
    cause is its to name once it has); on that page itself (`page`: the stage of the page drawing), its name alone."""
    stage = CHECKS[owner].stage if owner in CHECKS else None
    if not ran:  # the sentence apart from the link: a link's label is one line, and a long one was cut at 1024 px
        where.caption(_("Pending: {owner} owns this cause and has not run yet.").format(owner=owner))
    if stage in STAGE_PAGES and stage != page:
        label = _("Explained by {owner}, on the {stage} page") if ran else _("Open the {stage} page")
        where.page_link(STAGE_PAGES[stage], label=label.format(owner=owner, stage=_(STAGE_TITLES[stage])),
                        icon=":material/arrow_forward:" if ran else ":material/pending:")
    else:
        where.caption(_("Explained by {owner}").format(owner=owner))


def run_stage(stage: str, runner: Callable[[], list[CheckResult]]) -> list[CheckResult] | None:
    """Run a stage; unusable input, or anything a stage could not turn into a result, is a message on the page."""
    try:
        return runner()
    except InputError as exc:
        st.error(shown(message_of(exc)), icon=":material/error:")
        st.caption(_("Change the run configuration in the sidebar; everything else you entered is kept."))
        return None
    except Exception as exc:  # a stage turns its own failures into error results; this is the last guard
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else _("(no message)")
        st.error(_("The {stage} run stopped on {error}: {message}").format(
            stage=stage, error=type(exc).__name__, message=markdown_text(message)), icon=":material/bug_report:")
        return None


def status_line(results: list[CheckResult], where=st, *, waiting: tuple[str, ...] = (),
                ran: set[str] | None = None) -> None:
    """Badges counting the page's cards, each once: the results of each status that stand alone, the findings another
    check's cause explains (SEE), and the checks that have not looked yet (PENDING: skipped as not run, a finding
    whose owner has not run, and `waiting`: checks the page has not run at all), in `where` (the page, or a
    placeholder filled later). `ran`: the checks that have looked, on any page (by default, those of `results`)."""
    ran = ran if ran is not None else {r.id for r in results}
    still = [*(r.id for r in results if awaits_owner(r, ran) or r.id in pending([r])),
             *(check for check in waiting if check not in {r.id for r in results})]
    standing = [r for r in results if r.explained_by is None and r.id not in still]
    counts = {status: sum(r.status is status for r in standing) for status in Status}
    explained = sum(r.explained_by is not None and r.id not in still for r in results)
    where.markdown("  ".join([f"{badge(status)} {count}" for status, count in counts.items() if count]
                             + ([f"{explained_badge()} {explained}"] if explained else [])
                             + ([f"{pending_badge()} {len(still)}"] if still else [])))


def awaits_owner(result: CheckResult, ran: set[str]) -> bool:
    """A finding another check's cause explains, whose owner has not run here: its card waits on that owner."""
    return result.explained_by is not None and result.explained_by not in ran


def checklist(results: list[CheckResult], ran: set[str] | None = None) -> None:
    """Each check, worst first: badge, id, finding, and the fix: code as code, a sentence as a sentence; a finding
    another check's cause explains keeps its finding and links to that owner instead of a fix. Checks skipped for one
    same reason (a head the labels do not fit stops every check that trains) share one card naming them all."""
    ordered = worst_first(results, STAGE_ORDER)
    skipped: dict[str, list[CheckResult]] = {}
    for result in ordered:
        if result.status is Status.SKIP and not result.explained_by and not result.fix:
            skipped.setdefault(shown(result.summary), []).append(result)
    drawn, ran = set(), ran if ran is not None else {result.id for result in results}
    cards = {result.id for result in results}  # an owner whose card is in this list is named, not linked to
    for result in ordered:
        group = skipped.get(shown(result.summary), []) if result.status is Status.SKIP else []
        if result.id in drawn:
            continue
        with st.container(border=True):
            mark = pending_badge() if awaits_owner(result, ran) or result.id in pending([result]) \
                else explained_badge() if result.explained_by else badge(result.status)
            if len(group) > 1 and result in group:
                drawn.update(item.id for item in group)
                st.markdown(f"{mark} " + ", ".join(f"`{item.id}`" for item in group) + f"  \n{shown(result.summary)}")
                continue
            st.markdown(f"{mark} `{result.id}`  \n{shown(result.summary)}")
            if result.explained_by:
                owner_link(result.explained_by, ran=result.explained_by in ran,
                           page=CHECKS[result.explained_by].stage if result.explained_by in cards
                           and result.explained_by in CHECKS else None)
            elif result.fix:
                fix(result.fix)


def fix(value) -> None:
    """A fix: code as code, a sentence as a sentence."""
    if fix_is_code(value):
        # A long fix is folded at its commas, inside its brackets (still the same Python), and what is still too
        # long wraps rather than being cut at the right; the browser's own wrapping broke identifiers
        # ('from_pretrained(checkp' / 'oint') at 1024 px.
        st.code(folded_code(localize(value)), language="python", wrap_lines=True)
    else:
        st.markdown("**" + _("Fix") + ":** " + shown(value))


def causes_block(found: list[Found], action: Callable[[Found], None] | None = None,
                 results: list[CheckResult] = ()) -> None:
    """The causes, each named once: its status, owner (with a link to its page), finding, fix and what it explains;
    `action(cause)` draws what the cause's card offers besides (the sidebar's "Apply the fix"); never "no cause" while
    a check of `results` has not run yet."""
    st.subheader(causes_headline(found, results))
    for cause in found:
        with st.container(border=True):
            title = f" **{_(cause.title)}**" if cause.title else ""
            st.markdown(f"{badge(cause.status)} `{cause.owner}`{title}  \n{shown(cause.summary)}")
            if cause.pending:  # named by what another check measured; the owner's own verdict and fix are to come
                owner_link(cause.owner, ran=False)
                continue
            if cause.fix:
                fix(cause.fix)
            if action is not None:
                action(cause)
            if cause.explains:
                st.caption(_("Explains what {checks} found.").format(
                    checks=", ".join(f"`{check}`" for check in cause.explains)))
            stage = CHECKS[cause.owner].stage if cause.owner in CHECKS else None
            if stage in STAGE_PAGES:
                st.page_link(STAGE_PAGES[stage], label=_("Open the {stage} page").format(stage=_(STAGE_TITLES[stage])),
                             icon=":material/open_in_new:")


def by_id(results: list[CheckResult], check_id: str) -> CheckResult | None:
    return next((result for result in results if result.id == check_id), None)


# ---------------------------------------------------------------- a traced script's results

TRACED_KEY = "script.traced"  # {"name", "report", "message", "exit_code", "output"} of the last trace
ACTIVE_KEY = "script.active"  # the walk's pages show the traced results instead of the sidebar's pipeline


def traced_results(stage: str) -> list[CheckResult] | None:
    """The stage's results from the traced script when the pages show them (None: the sidebar's pipeline runs),
    under a banner naming the script."""
    traced = st.session_state.get(TRACED_KEY)
    if not st.session_state.get(ACTIVE_KEY) or not traced or not traced.get("report"):
        return None
    script = traced["report"].get("script", {})
    later = len(traced["report"].get("later_fits") or [])
    where = (_("fit at {line}").format(line=script["fit_at"]) + (
        _("; the first of {count} checked fits, each on the Your script page").format(count=later + 1)
        if later else "")) if script.get("reached_fit") else _("stopped before fit")
    st.info(_("Results traced from your script **{name}** ({where}). The sidebar's pipeline is not used here until you "
              "switch back on the **Your script** page or in the sidebar.").format(name=markdown_text(traced["name"]),
                                                                                    where=markdown_text(where)),
            icon=":material/code:")
    return [CheckResult.from_dict(check) for check in traced["report"].get("checks", []) if check["stage"] == stage]
