"""ui/reruns.py: the reruns a session, and the whole server, may start at once."""

from ui import reruns


def test_a_room_of_sessions_starts_at_most_the_servers_burst_at_once_and_each_sessions_latest_later(monkeypatch):
    """40 sessions each sending 21 identical reruns left /_stcore/health unanswered for over 60 s: the session's
    own bound let 800 start at once. Now a rerun needs a token from the server's bucket too; each session keeps
    one held rerun, and a later second brings only the server's rate."""
    monkeypatch.setattr(reruns, "SERVER", [])
    buckets = [reruns.Bucket(0.0) for _ in range(40)]
    started = held = 0
    for bucket in buckets:
        for _ in range(21):
            if bucket.held is None and reruns.admitted(bucket, 0.0):
                started += 1
            else:
                bucket.held, held = "latest", held + 1
    assert started == reruns.SERVER_BURST == 10
    # Sessions the server's bound held keep their own tokens: not charged for reruns they did not start.
    assert [bucket.tokens for bucket in buckets[1:]] == [reruns.BURST] * 39
    # One second later the server has SERVER_RATE tokens: that many held reruns run, whichever sessions they are.
    released = 0
    for bucket in buckets:
        if bucket.held is not None and reruns.admitted(bucket, 1.0):
            bucket.held, released = None, released + 1
    assert released == reruns.SERVER_RATE == 5


def test_one_session_alone_takes_at_most_the_servers_burst_and_waits_for_the_slower_bucket(monkeypatch):
    monkeypatch.setattr(reruns, "SERVER", [])
    bucket = reruns.Bucket(0.0)
    assert sum(reruns.admitted(bucket, 0.0) for _ in range(30)) == min(reruns.BURST, reruns.SERVER_BURST)
    assert reruns.wait_for(bucket, 0.0) == 1 / reruns.SERVER_RATE
