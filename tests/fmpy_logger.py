"""fmpy's process-wide logger, put back after a test (or a fuzz worker's host) changed it.

fmpy's logging proxy (fmpy.logging.addLoggerProxy, a small C library) keeps the last logger it
was handed in one process-wide variable: every FMU instance whose callbacks went through the
proxy, fmpy's default callbacks (FMU2Slave.instantiate(callbacks=None)) included, logs through
that one variable. simulate_fmu(logger=...) and a host that hands the proxy its own
fmi2CallbackFunctions leave it pointing at their callback: later FMUs on the default callbacks
then log into that test's list, or call a freed ctypes callback (a crash) once it is gone.

No pytest here: tests/fmu_fuzz_worker.py runs as a plain script and imports it too.
"""
from ctypes import byref

_PRINT = []       # fmpy's printLogMessage as a ctypes callback, alive for the process


def restore_fmpy_logger():
    """Point fmpy's logging proxy back at fmpy's own printLogMessage (what importing
    fmpy.fmi2 set), through a callback kept alive here; nothing when fmpy's logging library
    was never loaded (then nobody changed the proxy)."""
    import sys
    if "fmpy.logging" not in sys.modules:
        return
    from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, printLogMessage
    from fmpy.logging import addLoggerProxy
    if not _PRINT:
        _PRINT.append(fmi2CallbackLoggerTYPE(printLogMessage))
    cb = fmi2CallbackFunctions()       # (a fresh one: the proxy rewrites cb.logger)
    cb.logger = _PRINT[0]
    addLoggerProxy(byref(cb))
