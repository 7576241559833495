"""Workshop page: every scenario with its symptom and a link that opens it, and a warm-up that computes them all once
so a room's first clicks are answered from the shared results."""

import streamlit as st

from diagnostics.config import limits
from diagnostics.i18n import _
from diagnostics.core.check import STAGE_TITLES
from diagnostics.config.scenarios import SCENARIOS
from ui.links import link_params
from ui.render import STAGE_PAGES, choice, markdown_text
from ui.shared import computed
from ui.warmup import STAGE_PATHS, WARM_CHOICES, computed_with, first_stage, scenario_link, warm_jobs, \
    warm_overfit_job, warmth
from ui.address import app_url
from ui.caches import hub_reachable

st.title(_("Workshop"))
st.caption(_("For presenters: each scenario injects one known bug. Send the room a scenario's link: everyone opens "
             "the same run, and whatever one person computes (or the warm-up below) is shown to all at once."))
checkpoint = st.session_state.get("run.checkpoint", "").strip() or None
links = {name: scenario_link(name, checkpoint) for name in SCENARIOS}
st.caption(_("Links open on the checkpoint **{checkpoint}** (the sidebar's, when it can be used) with each page's "
             "default settings.").format(
    checkpoint=markdown_text(next(iter(links.values())).config.checkpoint)))

warm_up = st.container(border=True)  # drawn first, filled after the cards (whose badges it updates)
with warm_up:
    st.subheader(_("Warm up"))
    kind_names = {"data": _("Data checks"), "learnability": _("Learnability (trains two copies)"),
                  "model": _("Model checks"), "setup": _("Optimizer and loss"),
                  "training": _("Learning-rate sweep and range test"), "overfit": _("Overfit test")}
    chosen = st.multiselect(_("What to compute for every scenario"), WARM_CHOICES, default=list(WARM_CHOICES),
                            key=choice("workshop.kinds"), format_func=kind_names.get)
    kinds = [kind for choice in chosen for kind in computed_with(choice)]
    hosted = limits.hosted() is not None
    if hosted:
        st.caption(_("The warm-up is the presenter's: it runs on a server the presenter starts for the room (not in "
                     "hosted mode), which keeps its results for everyone."))
    pressed = st.button(_("Warm up every scenario"), type="primary", key="workshop.warm_up",
                        disabled=not kinds or hosted)


def badge_text(link) -> str:
    done, total = warmth(link)
    return (":material/local_fire_department: " + _("warm ({done} of {total})").format(done=done, total=total)
            if done == total else _("{done} of {total} computed").format(done=done, total=total))


badges = {}
for name, link in links.items():
    scenario = SCENARIOS[name]
    stage = first_stage(name)
    params = link_params(link, hub_reachable())
    with st.container(border=True):
        left, right = st.columns([3, 1])
        left.markdown(f"**{name}**: {_(scenario.title)}  \n" + _("**Symptom:** {symptom}").format(
            symptom=_(scenario.symptom)))
        expected = ", ".join(f"`{check}`" for check in scenario.expected_ids()) or _("nothing may fail")
        left.caption(_("Its causes, by the checks that own them: {checks}; first seen on the {stage} page.").format(
            checks=expected, stage=_(STAGE_TITLES[stage])))
        right.page_link(STAGE_PAGES[stage], label=_("Open it"), icon=":material/open_in_new:", query_params=params)
        badges[name] = right.empty()
        badges[name].caption(badge_text(link))
        left.code(app_url(STAGE_PATHS[stage], params), language=None, wrap_lines=True)  # whole at 1024 px

if pressed:
    # Each scenario's badge is drawn again as soon as its results are kept: during a warm-up of minutes the cards
    # say which scenarios are warm, not the counts from before it started.
    with warm_up:
        overall = st.progress(0.0, text=_("Starting"))
        for number, (name, link) in enumerate(links.items()):
            overall.progress(number / len(links), text=_("Scenario {number} of {count}: {name}").format(
                number=number + 1, count=len(links), name=name))
            badges[name].caption(":material/hourglass_top: " + _("Computing…"))
            for job in warm_jobs(link, kinds):
                computed(job, f"{name}, {_(STAGE_TITLES[job.stage])}:", pin=True)
            if "overfit" in kinds:
                computed(warm_overfit_job(link), f"{name}, {_('Overfit test')}:", pin=True)
            badges[name].caption(badge_text(link))
        overall.progress(1.0, text=_("Every scenario is warm: the room's pages open on kept results."))
