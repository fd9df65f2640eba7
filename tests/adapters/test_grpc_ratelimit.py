"""The kubelet's PodResources token bucket (app/adapters/grpc/ratelimit.py)."""

from __future__ import annotations

import pytest

from app.adapters.grpc.ratelimit import DEFAULT_BURST_TOKENS, DEFAULT_QPS, TokenBucket


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_defaults_are_the_kubelets() -> None:
    assert (DEFAULT_QPS, DEFAULT_BURST_TOKENS) == (100, 10)
    bucket = TokenBucket()
    assert (bucket.rate, bucket.burst) == (100.0, 10)


def test_burst_passes_then_the_next_call_in_the_same_instant_fails() -> None:
    bucket = TokenBucket(clock=FakeClock())
    assert [bucket.allow() for _ in range(10)] == [True] * 10
    assert bucket.allow() is False
    assert bucket.allow() is False


def test_tokens_come_back_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(clock=clock)
    for _ in range(10):
        bucket.allow()
    clock.now += 0.005  # half a token
    assert bucket.allow() is False
    clock.now += 0.005  # one token in all
    assert bucket.allow() is True
    assert bucket.allow() is False
    clock.now += 0.03
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]


def test_idle_time_saves_up_to_the_burst_only() -> None:
    clock = FakeClock()
    bucket = TokenBucket(clock=clock)
    bucket.allow()
    clock.now += 3600
    assert sum(bucket.allow() for _ in range(50)) == 10


def test_a_clock_going_backwards_adds_nothing() -> None:
    clock = FakeClock()
    bucket = TokenBucket(clock=clock)
    for _ in range(10):
        bucket.allow()
    clock.now -= 5
    assert bucket.allow() is False
    clock.now += 5.01  # back to the original instant plus one token
    assert bucket.allow() is True


@pytest.mark.parametrize(("rate", "burst"), [(0, 10), (100, 0), (-1, 1)], ids=str)
def test_invalid_parameters(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="rate limit"):
        TokenBucket(rate, burst)
