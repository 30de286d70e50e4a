/*
 * fmu_mb Python shim: lets a pythonfmu FMU binary run inside a process that
 * has not loaded Python (a plain C/C++ co-simulation master), with no
 * environment variables set by the user.
 *
 * fmu_mb.packaging compiles this file at package time with the system C
 * compiler, links it against the shared libpython of the building Python
 * (DT_NEEDED + RUNPATH to its directory), and adds it as DT_NEEDED to the
 * FMU's linux64 binary (RUNPATH $ORIGIN).  The loader therefore maps
 * libpython and this library before the FMU binary runs, which resolves the
 * FMU binary's Python symbols.  The constructor below then
 *
 *   1. re-opens libpython with RTLD_GLOBAL | RTLD_NOLOAD.  A host that
 *      dlopen()s the FMU with RTLD_LOCAL leaves libpython's symbols local to
 *      the FMU, and extension modules (math, numpy, ...) loaded later by the
 *      interpreter fail with "undefined symbol: PyFloat_Type".
 *   2. sets PYTHONEXECUTABLE to the interpreter recorded at build time, so that
 *      the interpreter that pythonfmu starts finds its standard library and,
 *      for a virtual environment, the environment's site-packages.  This is
 *      skipped when Python is already initialised in the process (a Python
 *      host such as fmpy) or when the user set PYTHONEXECUTABLE or PYTHONHOME.
 *      The variable stays in the process environment and is inherited by
 *      child processes the host starts.
 *
 * FMU_MB_PYTHON_EXECUTABLE (a C string literal) comes from the generated
 * header fmu_mb_pyshim_config.h.  No Python headers are needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "fmu_mb_pyshim_config.h"

#ifndef FMU_MB_PYTHON_EXECUTABLE
#error "FMU_MB_PYTHON_EXECUTABLE must be defined by fmu_mb_pyshim_config.h"
#endif

extern int Py_IsInitialized(void);
extern void Py_InitializeEx(int initsigs);
extern void* PyEval_SaveThread(void);

static void* libpython_handle = NULL;

/* Exported so that a test (or a curious user) can check which interpreter the
 * shim was built for: nm -D libfmu_mb_pyshim.so | grep fmu_mb_pyshim. */
const char* fmu_mb_pyshim_python_executable(void)
{
    return FMU_MB_PYTHON_EXECUTABLE;
}

__attribute__((constructor)) static void fmu_mb_pyshim_init(void)
{
    Dl_info info;
    if (dladdr((void*)&Py_IsInitialized, &info) != 0 && info.dli_fname != NULL) {
        /* Promote the already loaded libpython to the global scope; the handle
         * is kept for the life of the process on purpose. */
        libpython_handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    }

    if (Py_IsInitialized()) {
        return;
    }
    if (getenv("PYTHONEXECUTABLE") == NULL && getenv("PYTHONHOME") == NULL) {
        setenv("PYTHONEXECUTABLE", FMU_MB_PYTHON_EXECUTABLE, 0);
    }
    /* Start the interpreter here, before the FMU's own code runs, so that pythonfmu finds it
     * running, does not own it, and never calls Py_Finalize at process exit: numpy and scipy
     * do not survive finalisation in an embedded interpreter (scipy's uarray module crashes
     * in its static destructors), and a host process should not crash while exiting.
     * No signal handlers are installed (the host keeps its own), and the GIL is released
     * with this thread's state kept, so later FMI calls on this thread are cheap. */
    Py_InitializeEx(0);
    (void)PyEval_SaveThread();
}
