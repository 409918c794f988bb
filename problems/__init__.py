"""Problem generators and data sets for qpcore tests and benchmarks."""

# the modules are the API (problems.svm, problems.svmlight, problems.data, ...); nothing is re-exported here
__all__: list[str] = []
