"""Workshop page: every scenario with its symptom and a link that opens it, and a warm-up that computes them all once
so a room's first clicks are answered from the shared results."""

import streamlit as st

from diagnostics.registry import STAGE_TITLES
from diagnostics.scenarios import SCENARIOS
from diagnostics.shared import KINDS
from ui.links import link_params
from ui.shared import STAGE_PAGES, STAGE_PATHS, computed, first_stage, scenario_link, warm_jobs, \
    warm_overfit_job, warmth
from ui.state import app_url, hub_reachable

st.title("Workshop")
st.caption("For presenters: each scenario injects one known bug. Send the room a scenario's link: everyone opens the "
           "same run, and whatever one person computes (or the warm-up below) is shown to all at once.")
checkpoint = st.session_state.get("run.checkpoint", "").strip() or None
links = {name: scenario_link(name, checkpoint) for name in SCENARIOS}
st.caption(f"Links open on the checkpoint **{next(iter(links.values())).config.checkpoint}** (the sidebar's, when "
           "it can be used) with each page's default settings.")

with st.container(border=True):
    st.subheader("Warm up")
    kinds = st.multiselect("What to compute for every scenario", KINDS, default=list(KINDS),
                           key="workshop.kinds", format_func={
                               "data": "Data checks", "learnability": "Learnability (trains two copies)",
                               "model": "Model checks", "setup": "Optimizer and loss", "training":
                               "Learning-rate sweep and range test", "overfit": "Overfit test"}.get)
    if st.button("Warm up every scenario", type="primary", key="workshop.warm_up", disabled=not kinds):
        overall = st.progress(0.0, text="Starting")
        for number, (name, link) in enumerate(links.items()):
            overall.progress(number / len(links), text=f"Scenario {number + 1} of {len(links)}: {name}")
            jobs = warm_jobs(link, kinds)
            for job in jobs:
                computed(job, f"{name}, {STAGE_TITLES[job.stage]}:")
            if "overfit" in kinds:
                computed(warm_overfit_job(link), f"{name}, overfit test:")
        overall.progress(1.0, text="Every scenario is warm: the room's pages open on kept results.")

for name, link in links.items():
    scenario = SCENARIOS[name]
    stage = first_stage(name)
    params = link_params(link, hub_reachable())
    with st.container(border=True):
        left, right = st.columns([3, 1])
        left.markdown(f"**{name}**: {scenario.title}  \n**Symptom:** {scenario.symptom}")
        expected = ", ".join(f"`{check}`" for check in scenario.expected_ids()) or "nothing may fail"
        left.caption(f"Flagged by {expected}; first seen on the {STAGE_TITLES[stage]} page.")
        done, total = warmth(link)
        right.page_link(STAGE_PAGES[stage], label="Open it", icon=":material/open_in_new:", query_params=params)
        right.caption(f":material/local_fire_department: warm ({done} of {total})" if done == total else
                      f"{done} of {total} computed")
        left.code(app_url(STAGE_PATHS[stage], params), language=None)
