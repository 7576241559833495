"""The walk: the registry that collects every stage's checks, causes and units, the one runner that runs units on
a run context, the causes that name each finding once, and the stages as callers ask for them."""
