"""Go's behaviour that the kubelet's texts and parsers depend on, reproduced once."""
