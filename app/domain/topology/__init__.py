"""A machine's CPU and memory topology: the model, synthetic builds and specs, records and views."""
