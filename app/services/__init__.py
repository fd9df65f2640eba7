"""Use cases combining the domain engine and the adapters."""
