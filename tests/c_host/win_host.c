/*
 * win_host: a minimal FMI 2.0 co-simulation master that compiles for Windows (MinGW-w64, run
 * under wine in the tests) and for Linux alike, so that the win64 and linux64 binaries of one
 * native FMU are driven by the same program (tests/test_native_platforms.py).
 *
 * usage: win_host [-3] LIBRARY GUID START STOP STEP VR [VR...]
 *
 *   -3       the FMU is an FMI 3.0 co-simulation FMU (fmi3* functions; GUID is its
 *            instantiation token; VR are Float64 variables)
 *   LIBRARY  the FMU's binary (binaries/win64/<id>.dll or binaries/linux64/<id>.so)
 *   VR       value references of Real variables printed after initialisation and after every
 *            step, as CSV "time,v1,v2,..." (%.17g: every double round-trips)
 *
 * Communication points are START + k STEP up to STOP. Any status other than fmi2OK is
 * reported on stderr with the FMU's messages and gives exit code 1.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
typedef HMODULE Lib;
static Lib lib_open(const char* path) { return LoadLibraryA(path); }
static void* lib_sym(Lib l, const char* name) { return (void*)GetProcAddress(l, name); }
static void lib_close(Lib l) { FreeLibrary(l); }
#else
#include <dlfcn.h>
typedef void* Lib;
static Lib lib_open(const char* path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void* lib_sym(Lib l, const char* name) { return dlsym(l, name); }
static void lib_close(Lib l) { dlclose(l); }
#endif

#include "fmi2_types.h"

typedef fmi2Component (*InstantiateFn)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                       const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
typedef void (*FreeInstanceFn)(fmi2Component);
typedef fmi2Status (*SetupExperimentFn)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real,
                                        fmi2Boolean, fmi2Real);
typedef fmi2Status (*ComponentFn)(fmi2Component);
typedef fmi2Status (*GetRealFn)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*);
typedef fmi2Status (*DoStepFn)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env;
    char text[4096];
    va_list args;
    va_start(args, message);
    vsnprintf(text, sizeof text, message, args);
    va_end(args);
    fprintf(stderr, "[%s %d %s] %s\n", name ? name : "", (int)status, category ? category : "",
            text);
}

/* FMI 3.0 */
typedef void (*Log3Fn)(void*, int, const char*, const char*);
typedef void* (*Instantiate3Fn)(const char*, const char*, const char*, bool, bool, bool, bool,
                                const unsigned int*, size_t, void*, Log3Fn, void*);
typedef int (*EnterInit3Fn)(void*, bool, double, double, bool, double);
typedef int (*Component3Fn)(void*);
typedef void (*Free3Fn)(void*);
typedef int (*GetFloat64Fn)(void*, const unsigned int*, size_t, double*, size_t);
typedef int (*DoStep3Fn)(void*, double, double, bool, bool*, bool*, bool*, double*);

static void logger3(void* env, int status, const char* category, const char* message)
{
    (void)env;
    fprintf(stderr, "[%d %s] %s\n", status, category ? category : "", message);
}

static void* need(Lib l, const char* name)
{
    void* f = lib_sym(l, name);
    if (f == NULL) {
        fprintf(stderr, "win_host: the library does not export %s\n", name);
        exit(1);
    }
    return f;
}

static int check(fmi2Status s, const char* what)
{
    if (s != fmi2OK) {
        fprintf(stderr, "win_host: %s returned status %d\n", what, (int)s);
        return 1;
    }
    return 0;
}

static void print_row(double t, const double* y, int n)
{
    printf("%.17g", t);
    for (int i = 0; i < n; ++i) {
        printf(",%.17g", y[i]);
    }
    printf("\n");
}

static int run3(Lib lib, const char* guid, double start, double stop, double step,
                const unsigned int* vr, double* y, int n)
{
    Instantiate3Fn instantiate = (Instantiate3Fn)need(lib, "fmi3InstantiateCoSimulation");
    Free3Fn free_instance = (Free3Fn)need(lib, "fmi3FreeInstance");
    EnterInit3Fn enter_init = (EnterInit3Fn)need(lib, "fmi3EnterInitializationMode");
    Component3Fn exit_init = (Component3Fn)need(lib, "fmi3ExitInitializationMode");
    Component3Fn terminate = (Component3Fn)need(lib, "fmi3Terminate");
    GetFloat64Fn get = (GetFloat64Fn)need(lib, "fmi3GetFloat64");
    DoStep3Fn do_step = (DoStep3Fn)need(lib, "fmi3DoStep");
    void* c = instantiate("win_host", guid, NULL, false, false, false, false, NULL, 0, NULL,
                          logger3, NULL);
    if (c == NULL) {
        fprintf(stderr, "win_host: fmi3InstantiateCoSimulation returned NULL\n");
        return 1;
    }
    int bad = check(enter_init(c, false, 0.0, start, true, stop), "fmi3EnterInitializationMode")
           || check(exit_init(c), "fmi3ExitInitializationMode")
           || check(get(c, vr, (size_t)n, y, (size_t)n), "fmi3GetFloat64");
    if (!bad) {
        print_row(start, y, n);
    }
    long steps = (long)((stop - start) / step + 0.5);
    double t = start;
    for (long k = 1; k <= steps && !bad; ++k) {
        double next = start + (double)k * step, last = 0.0;
        bool event = false, end = false, early = false;
        bad = check(do_step(c, t, next - t, true, &event, &end, &early, &last), "fmi3DoStep")
           || check(get(c, vr, (size_t)n, y, (size_t)n), "fmi3GetFloat64");
        if (!bad && (event || end || early || last != next)) {
            fprintf(stderr, "win_host: fmi3DoStep to %.17g ended at %.17g (event %d, terminate "
                    "%d, early return %d)\n", next, last, event, end, early);
            bad = 1;
        }
        t = next;
        if (!bad) {
            print_row(t, y, n);
        }
    }
    if (!bad) {
        bad = check(terminate(c), "fmi3Terminate");
    }
    free_instance(c);
    return bad;
}

int main(int argc, char** argv)
{
    int fmi3 = argc > 1 && strcmp(argv[1], "-3") == 0;
    if (fmi3) {
        argv++;
        argc--;
    }
    if (argc < 7) {
        fprintf(stderr, "usage: win_host [-3] LIBRARY GUID START STOP STEP VR [VR...]\n");
        return 2;
    }
    const char* path = argv[1];
    const char* guid = argv[2];
    double start = strtod(argv[3], NULL), stop = strtod(argv[4], NULL);
    double step = strtod(argv[5], NULL);
    int n = argc - 6;
    fmi2ValueReference* vr = calloc((size_t)n, sizeof *vr);
    double* y = calloc((size_t)n, sizeof *y);
    for (int i = 0; i < n; ++i) {
        vr[i] = (fmi2ValueReference)strtoul(argv[6 + i], NULL, 10);
    }
    Lib lib = lib_open(path);
    if (lib == NULL) {
        fprintf(stderr, "win_host: cannot load %s\n", path);
        return 1;
    }
    if (fmi3) {
        int bad3 = run3(lib, guid, start, stop, step, vr, y, n);
        lib_close(lib);
        free(vr);
        free(y);
        return bad3 ? 1 : 0;
    }
    InstantiateFn instantiate = (InstantiateFn)need(lib, "fmi2Instantiate");
    FreeInstanceFn free_instance = (FreeInstanceFn)need(lib, "fmi2FreeInstance");
    SetupExperimentFn setup = (SetupExperimentFn)need(lib, "fmi2SetupExperiment");
    ComponentFn enter_init = (ComponentFn)need(lib, "fmi2EnterInitializationMode");
    ComponentFn exit_init = (ComponentFn)need(lib, "fmi2ExitInitializationMode");
    ComponentFn terminate = (ComponentFn)need(lib, "fmi2Terminate");
    GetRealFn get_real = (GetRealFn)need(lib, "fmi2GetReal");
    DoStepFn do_step = (DoStepFn)need(lib, "fmi2DoStep");
    fmi2CallbackFunctions cb = {logger, NULL, NULL, NULL, NULL};
    fmi2Component c = instantiate("win_host", fmi2CoSimulation, guid, NULL, &cb, 0, 0);
    if (c == NULL) {
        fprintf(stderr, "win_host: fmi2Instantiate returned NULL\n");
        return 1;
    }
    int bad = check(setup(c, 0, 0.0, start, 1, stop), "fmi2SetupExperiment")
           || check(enter_init(c), "fmi2EnterInitializationMode")
           || check(exit_init(c), "fmi2ExitInitializationMode")
           || check(get_real(c, vr, (size_t)n, y), "fmi2GetReal");
    if (!bad) {
        print_row(start, y, n);
    }
    long steps = (long)((stop - start) / step + 0.5);
    double t = start;
    for (long k = 1; k <= steps && !bad; ++k) {
        double next = start + (double)k * step;
        bad = check(do_step(c, t, next - t, 1), "fmi2DoStep")
           || check(get_real(c, vr, (size_t)n, y), "fmi2GetReal");
        t = next;
        if (!bad) {
            print_row(t, y, n);
        }
    }
    if (!bad) {
        bad = check(terminate(c), "fmi2Terminate");
    }
    free_instance(c);
    lib_close(lib);
    free(vr);
    free(y);
    return bad ? 1 : 0;
}
