"""A simulated node: the node and its managers, its snapshot, and its state files on disk."""
