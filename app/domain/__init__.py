"""The kubelet-faithful engine: pure Python, standard library only."""
