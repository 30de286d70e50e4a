"""FMI layer: the FMI 2.0 co-simulation plumbing.

The pythonfmu slave that wraps a model (slave.py), the controller FMUs (controller.py), the
build of an FMU from a model file (build.py) and its post-processing and native shim
(packaging.py, native/shim.c). Imports the dynamics and mechanics layers.
"""
