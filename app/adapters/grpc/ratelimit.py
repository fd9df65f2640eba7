"""The kubelet's PodResources rate limit (follows pkg/kubelet/apis/podresources/grpc/ratelimit.go).

One token bucket per server, shared by every client and every method: ``DEFAULT_QPS`` tokens
per second, at most ``DEFAULT_BURST_TOKENS`` saved up, and the bucket starts full (as
golang.org/x/time/rate's ``Limiter.Allow`` behaves). A call that finds no token fails at once
with ``RESOURCE_EXHAUSTED`` / ``rejected by rate limit``; nothing waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

DEFAULT_QPS = 100
DEFAULT_BURST_TOKENS = 10
LIMIT_EXCEEDED_CODE = grpc.StatusCode.RESOURCE_EXHAUSTED
LIMIT_EXCEEDED_MESSAGE = "rejected by rate limit"


class TokenBucket:
    """``rate`` tokens per second, capacity ``burst``; ``clock`` is injectable for tests."""

    def __init__(
        self,
        rate: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate limit needs rate > 0 and burst >= 1, got {rate}/{burst}")
        self.rate = float(rate)
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last: int | None = None
        self._lock = threading.Lock()

    def allow(self) -> bool:
        """Take one token if there is one (``Limiter.Allow``).

        Time is counted in whole nanoseconds, as Go's ``time.Duration``, so that refills add
        up exactly (two 5 ms gaps at 100/s make one token).
        """
        with self._lock:
            now = round(self._clock() * 1e9)
            if self._last is not None and now > self._last:
                refill = (now - self._last) * self.rate / 1e9
                self._tokens = min(float(self.burst), self._tokens + refill)
            if self._last is None or now > self._last:
                self._last = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    @property
    def tokens(self) -> float:
        return self._tokens


def _reject(request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(LIMIT_EXCEEDED_CODE, LIMIT_EXCEEDED_MESSAGE)


_REJECT_HANDLER = grpc.unary_unary_rpc_method_handler(_reject)


class RateLimitInterceptor(grpc.ServerInterceptor):
    """Server interceptor applying one limiter to every registered unary method.

    Calls to methods the server does not serve are left alone (they fail UNIMPLEMENTED
    without taking a token, as grpc-go answers them before any interceptor runs).
    """

    def __init__(self, limiter: TokenBucket) -> None:
        self.limiter = limiter

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None or self.limiter.allow():
            return handler
        return _REJECT_HANDLER
