"""Pods as the resource managers see them: the model, manifests, QoS, requests and budgets."""
