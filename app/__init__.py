"""Numascope: how a Kubernetes node's CPUs and memory are handed out by the kubelet."""

__version__ = "0.1.0"
