"""Topology manager: NUMA bitmasks, hints, merge policies and scopes."""
