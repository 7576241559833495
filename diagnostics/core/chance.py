"""How often chance alone gives what a check saw: exact binomial tails, for verdicts that must not rest on luck."""

from __future__ import annotations

import math


def chance_of_at_least(hits: int, draws: int, share: float) -> float:
    """How often `draws` independent draws, each a hit with probability `share`, give at least `hits` hits (the
    upper tail of the binomial distribution), summed in log space so large batches neither overflow nor underflow."""
    share = min(max(share, 0.0), 1.0)
    hits = max(hits, 0)
    if hits == 0:
        return 1.0
    if hits > draws or share == 0.0:
        return 0.0
    if share == 1.0:
        return 1.0
    log_share, log_rest = math.log(share), math.log1p(-share)
    terms = [math.lgamma(draws + 1) - math.lgamma(k + 1) - math.lgamma(draws - k + 1) + k * log_share
             + (draws - k) * log_rest for k in range(hits, draws + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(term - top) for term in terms))


def chance_of_none(draws: int, share: float) -> float:
    """How often `draws` draws hold none of an outcome that has probability `share` each time."""
    return (1.0 - min(max(share, 0.0), 1.0)) ** draws
