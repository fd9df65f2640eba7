"""Memory manager: Static policy, machine state, hints, pod-level (KEP-5526) allocation."""
