"""Problem generators and data sets for qpcore tests and benchmarks."""
