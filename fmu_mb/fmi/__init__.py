"""FMI layer: the FMI 2.0 co-simulation plumbing.

The pythonfmu slave that wraps a model (slave.py), the FMI 2.0 statuses of the adapters
(guard.py), the controller FMUs (controller.py), the build of an FMU from a model file
(build.py) and its post-processing and native layer (packaging.py, native/front.c: the FMI
front, native/shim.c: finds and starts Python); the native FMU, the compiled engine behind the
FMI 2.0 C API with no Python (native_build.py, native/fmi2_native.c). Imports the engine,
dynamics and mechanics layers.
"""
