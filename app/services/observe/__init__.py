"""Observing the real node Numascope runs on (read-only): one observation of its sysfs, kubelet
files and PodResources (``observation``), the page and JSON view models built from it
(``views``) and the observer that re-observes on request and caches them (``observer``). The
node is served as a ``NodeSource`` by ``app.services.nodes.observed``.
"""
