"""The anchors: other solvers run beside ours (LIBSVM, SVMlight; svmocas and LIBLINEAR for the linear
SVM studies), each launched and read the same way for every study that uses it.

``bash benchmarks/anchors/setup_svmlight.sh`` builds SVMlight once per machine.
"""
