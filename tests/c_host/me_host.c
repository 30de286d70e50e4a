/*
 * me_host: a model-exchange host of the project's own for the native fmu_mb FMUs
 * (tests/test_model_exchange.py, bench/me_derivatives.py). The FMI 2.0 types are those of
 * fmi2_types.h; no FMI header is needed.
 *
 * usage: me_host COMMAND FMU_DIR GUID MODEL_IDENTIFIER [ARGS...]
 *
 *   run METHOD STOP H OUT_VRS     integrate from t = 0 to STOP with fixed steps of H by METHOD
 *                                 (euler: explicit Euler; rk4: the classical Runge-Kutta
 *                                 method), with event handling: after each step the event
 *                                 indicators are compared with those at the step's start; on
 *                                 a sign change (from > 0 to <= 0 or back) the step is
 *                                 bisected to its first crossing (|dt| <= 1e-13 s, the state
 *                                 at the crossing's right end), Event Mode's iteration runs
 *                                 (fmi2NewDiscreteStates until nothing changes; the states
 *                                 re-read when changed) and the integration goes on from
 *                                 there. OUT_VRS: comma-separated value references of Real
 *                                 variables, or of Integer ones with the prefix i (e.g.
 *                                 12,i41: fmi2GetReal of 12, fmi2GetInteger of 41). Prints
 *                                 "t,y1,y2,..." at each multiple of H (%.17g; Integers as
 *                                 integers) and "event,t" at each event.
 *   bench N TRAJ_H                N calls of (fmi2SetContinuousStates, fmi2GetDerivatives)
 *                                 along an rk4 trajectory of step TRAJ_H stored beforehand
 *                                 (the loops are closed from the last solution at every
 *                                 call, as in an integrator), and N calls of
 *                                 fmi2GetDerivatives alone at one state (the engine's
 *                                 acceleration solve and the FMI call): prints
 *                                 "set_and_derivatives_us=... derivatives_us=... ratio=..."
 *                                 (CPU time per call).
 *
 * Every status other than fmi2OK (fmi2Warning: printed, accepted) exits non-zero.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2_types.h"

typedef struct {
    fmi2Boolean newDiscreteStatesNeeded;
    fmi2Boolean terminateSimulation;
    fmi2Boolean nominalsOfContinuousStatesChanged;
    fmi2Boolean valuesOfContinuousStatesChanged;
    fmi2Boolean nextEventTimeDefined;
    fmi2Real nextEventTime;
} fmi2EventInfo;

typedef struct {
    void* handle;
    fmi2Component (*Instantiate)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                 const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
    void (*FreeInstance)(fmi2Component);
    fmi2Status (*SetupExperiment)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean,
                                  fmi2Real);
    fmi2Status (*EnterInitializationMode)(fmi2Component);
    fmi2Status (*ExitInitializationMode)(fmi2Component);
    fmi2Status (*Terminate)(fmi2Component);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*);
    fmi2Status (*GetInteger)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Integer*);
    fmi2Status (*SetTime)(fmi2Component, fmi2Real);
    fmi2Status (*SetContinuousStates)(fmi2Component, const fmi2Real*, size_t);
    fmi2Status (*GetContinuousStates)(fmi2Component, fmi2Real*, size_t);
    fmi2Status (*GetDerivatives)(fmi2Component, fmi2Real*, size_t);
    fmi2Status (*GetEventIndicators)(fmi2Component, fmi2Real*, size_t);
    fmi2Status (*EnterEventMode)(fmi2Component);
    fmi2Status (*NewDiscreteStates)(fmi2Component, fmi2EventInfo*);
    fmi2Status (*EnterContinuousTimeMode)(fmi2Component);
    fmi2Status (*CompletedIntegratorStep)(fmi2Component, fmi2Boolean, fmi2Boolean*,
                                          fmi2Boolean*);
} Api;

static Api api;
static fmi2Component comp;
static size_t nx, nz;

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env; (void)category;
    if (status != fmi2OK) {
        fprintf(stderr, "[%d] %s: %s\n", (int)status, name ? name : "", message);
    }
}

static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};

static void die(const char* fmt, ...)
{
    va_list a;
    va_start(a, fmt);
    vfprintf(stderr, fmt, a);
    va_end(a);
    fputc('\n', stderr);
    exit(1);
}

static void check(fmi2Status s, const char* what)
{
    if (s != fmi2OK && s != fmi2Warning) {
        die("%s returned status %d", what, (int)s);
    }
}

static void load(const char* dir, const char* id)
{
    char lib[8300];
    snprintf(lib, sizeof lib, "%s/binaries/linux64/%s.so", dir, id);
    api.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!api.handle) {
        die("dlopen %s: %s", lib, dlerror());
    }
#define SYM(n) do { *(void**)(&api.n) = dlsym(api.handle, "fmi2" #n); \
                    if (!api.n) die("no fmi2" #n); } while (0)
    SYM(Instantiate); SYM(FreeInstance); SYM(SetupExperiment); SYM(EnterInitializationMode);
    SYM(ExitInitializationMode); SYM(Terminate); SYM(GetReal); SYM(GetInteger);
    SYM(SetTime);
    SYM(SetContinuousStates); SYM(GetContinuousStates); SYM(GetDerivatives);
    SYM(GetEventIndicators); SYM(EnterEventMode); SYM(NewDiscreteStates);
    SYM(EnterContinuousTimeMode); SYM(CompletedIntegratorStep);
#undef SYM
}

/* Event Mode's iteration; 1 when the continuous states changed */
static int event_iteration(void)
{
    fmi2EventInfo info;
    int changed = 0;
    do {
        check(api.NewDiscreteStates(comp, &info), "fmi2NewDiscreteStates");
        changed |= info.valuesOfContinuousStatesChanged != 0;
        if (info.terminateSimulation) {
            die("the FMU asked to terminate");
        }
    } while (info.newDiscreteStatesNeeded);
    return changed;
}

static void start(const char* guid, const char* dir)
{
    char uri[8300];
    snprintf(uri, sizeof uri, "file://%s/resources", dir);
    comp = api.Instantiate("me_host", fmi2ModelExchange, guid, uri, &callbacks, 0, 0);
    if (!comp) {
        die("fmi2Instantiate(fmi2ModelExchange) returned NULL");
    }
    check(api.SetupExperiment(comp, 0, 0.0, 0.0, 0, 0.0), "fmi2SetupExperiment");
    check(api.EnterInitializationMode(comp), "fmi2EnterInitializationMode");
    check(api.ExitInitializationMode(comp), "fmi2ExitInitializationMode");
    event_iteration();
    check(api.EnterContinuousTimeMode(comp), "fmi2EnterContinuousTimeMode");
}

static void f(double t, const double* x, double* dx)
{
    check(api.SetTime(comp, t), "fmi2SetTime");
    check(api.SetContinuousStates(comp, x, nx), "fmi2SetContinuousStates");
    check(api.GetDerivatives(comp, dx, nx), "fmi2GetDerivatives");
}

/* one step of h from (t, x) into xn by the method (0 euler, 1 rk4) */
static void step(int method, double t, const double* x, double h, double* xn, double* w)
{
    double *k1 = w, *k2 = w + nx, *k3 = w + 2 * nx, *k4 = w + 3 * nx, *xt = w + 4 * nx;
    f(t, x, k1);
    if (method == 0) {
        for (size_t i = 0; i < nx; ++i) xn[i] = x[i] + h * k1[i];
        return;
    }
    for (size_t i = 0; i < nx; ++i) xt[i] = x[i] + h / 2 * k1[i];
    f(t + h / 2, xt, k2);
    for (size_t i = 0; i < nx; ++i) xt[i] = x[i] + h / 2 * k2[i];
    f(t + h / 2, xt, k3);
    for (size_t i = 0; i < nx; ++i) xt[i] = x[i] + h * k3[i];
    f(t + h, xt, k4);
    for (size_t i = 0; i < nx; ++i) xn[i] = x[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
}

/* the indicators at (t, x) (the FMU then holds that state) */
static void indicators(double t, const double* x, double* z)
{
    check(api.SetTime(comp, t), "fmi2SetTime");
    check(api.SetContinuousStates(comp, x, nx), "fmi2SetContinuousStates");
    if (nz) {
        check(api.GetEventIndicators(comp, z, nz), "fmi2GetEventIndicators");
    }
}

static int crossed(const double* z0, const double* z1)
{
    for (size_t i = 0; i < nz; ++i) {
        if ((z0[i] > 0.0) != (z1[i] > 0.0)) {
            return 1;
        }
    }
    return 0;
}

/* the outputs: vr[k] read by fmi2GetInteger where is_int[k], else by fmi2GetReal (one
 * variable at a time, so that each keeps its place in the row) */
static void print_row(double t, const fmi2ValueReference* vr, const int* is_int, size_t nout,
                      double* y)
{
    printf("%.17g", t);
    for (size_t k = 0; k < nout; ++k) {
        if (is_int[k]) {
            fmi2Integer i = 0;
            check(api.GetInteger(comp, vr + k, 1, &i), "fmi2GetInteger");
            printf(",%d", (int)i);
        } else {
            check(api.GetReal(comp, vr + k, 1, y + k), "fmi2GetReal");
            printf(",%.17g", y[k]);
        }
    }
    printf("\n");
}

static int run(int method, double stop, double H, const fmi2ValueReference* vr,
               const int* is_int, size_t nout)
{
    double* x = calloc(nx + 1, sizeof(double));
    double* xn = calloc(nx + 1, sizeof(double));
    double* xa = calloc(nx + 1, sizeof(double));
    double* w = calloc(5 * nx + 1, sizeof(double));
    double* z0 = calloc(nz + 1, sizeof(double));
    double* z1 = calloc(nz + 1, sizeof(double));
    double* y = calloc(nout + 1, sizeof(double));
    check(api.GetContinuousStates(comp, x, nx), "fmi2GetContinuousStates");
    double t = 0.0;
    long k = 0, n = (long)floor(stop / H + 0.5);
    print_row(t, vr, is_int, nout, y);
    indicators(t, x, z0);
    while (k < n) {
        double t_next = (k + 1) * H, h = t_next - t;
        step(method, t, x, h, xn, w);
        indicators(t_next, xn, z1);
        if (nz && crossed(z0, z1)) {
            /* the first crossing: bisect the step's length (each trial a step from t) */
            double a = 0.0, b = h;
            while (b - a > 1e-13) {
                double m = 0.5 * (a + b);
                step(method, t, x, m, xa, w);
                indicators(t + m, xa, z1);
                if (crossed(z0, z1)) {
                    b = m;
                } else {
                    a = m;
                }
            }
            step(method, t, x, b, xn, w);
            t += b;
            memcpy(x, xn, nx * sizeof(double));
            check(api.SetTime(comp, t), "fmi2SetTime");
            check(api.SetContinuousStates(comp, x, nx), "fmi2SetContinuousStates");
            check(api.EnterEventMode(comp), "fmi2EnterEventMode");
            if (event_iteration()) {
                check(api.GetContinuousStates(comp, x, nx), "fmi2GetContinuousStates");
            }
            check(api.EnterContinuousTimeMode(comp), "fmi2EnterContinuousTimeMode");
            printf("event,%.17g\n", t);
            indicators(t, x, z0);
            continue;
        }
        t = t_next;
        ++k;
        memcpy(x, xn, nx * sizeof(double));
        memcpy(z0, z1, nz * sizeof(double));
        fmi2Boolean enter = 0, term = 0;
        check(api.CompletedIntegratorStep(comp, 1, &enter, &term), "fmi2CompletedIntegratorStep");
        print_row(t, vr, is_int, nout, y);
    }
    free(x); free(xn); free(xa); free(w); free(z0); free(z1); free(y);
    return 0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int bench(long N, double H)
{
    size_t M = 200;                             /* states along an rk4 trajectory */
    double* traj = calloc((M + 1) * nx + 1, sizeof(double));
    double* w = calloc(5 * nx + 1, sizeof(double));
    double* dx = calloc(nx + 1, sizeof(double));
    check(api.GetContinuousStates(comp, traj, nx), "fmi2GetContinuousStates");
    for (size_t k = 0; k < M; ++k) {
        step(1, k * H, traj + k * nx, H, traj + (k + 1) * nx, w);
    }
    check(api.SetTime(comp, 0.0), "fmi2SetTime");
    check(api.SetContinuousStates(comp, traj, nx), "fmi2SetContinuousStates");
    for (long i = 0; i < 200; ++i) {           /* warm-up */
        check(api.GetDerivatives(comp, dx, nx), "fmi2GetDerivatives");
    }
    double c0 = cpu_now();
    for (long i = 0; i < N; ++i) {
        check(api.GetDerivatives(comp, dx, nx), "fmi2GetDerivatives");
    }
    double only = (cpu_now() - c0) / N;
    c0 = cpu_now();
    for (long i = 0; i < N; ++i) {              /* forth and back along the trajectory */
        long j = i % (2 * (long)M);
        size_t k = (size_t)(j < (long)M ? j + 1 : 2 * (long)M - j - 1);
        check(api.SetTime(comp, k * H), "fmi2SetTime");
        check(api.SetContinuousStates(comp, traj + k * nx, nx), "fmi2SetContinuousStates");
        check(api.GetDerivatives(comp, dx, nx), "fmi2GetDerivatives");
    }
    double both = (cpu_now() - c0) / N;
    printf("set_and_derivatives_us=%.3f derivatives_us=%.3f ratio=%.3f\n", both * 1e6,
           only * 1e6, both / only);
    free(traj); free(w); free(dx);
    return 0;
}

int main(int argc, char** argv)
{
    if (argc < 5) {
        die("usage: me_host run|bench FMU_DIR GUID MODEL_IDENTIFIER [ARGS...]");
    }
    load(argv[2], argv[4]);
    start(argv[3], argv[2]);
    /* the counts the FMU accepts: its states and indicators are those of modelDescription.xml;
     * the test passes them, NX and NZ in the environment */
    const char* sx = getenv("ME_NX");
    const char* sz = getenv("ME_NZ");
    if (!sx || !sz) {
        die("set ME_NX and ME_NZ (the numbers of continuous states and event indicators)");
    }
    nx = (size_t)strtoul(sx, NULL, 10);
    nz = (size_t)strtoul(sz, NULL, 10);
    int rc = 0;
    if (strcmp(argv[1], "run") == 0 && argc >= 9) {
        int method = strcmp(argv[5], "euler") == 0 ? 0 : strcmp(argv[5], "rk4") == 0 ? 1 : -1;
        if (method < 0) {
            die("METHOD is euler or rk4, not %s", argv[5]);
        }
        fmi2ValueReference vr[256];
        int is_int[256];
        size_t nout = 0;
        for (const char* s = argv[8]; *s && nout < 256;) {
            char* end;
            is_int[nout] = *s == 'i';
            s += is_int[nout];
            vr[nout++] = (fmi2ValueReference)strtoul(s, &end, 10);
            if (end == s || (*end && *end != ',')) {
                die("OUT_VRS: expected comma-separated value references (an Integer's with "
                    "the prefix i), not %s", argv[8]);
            }
            s = *end == ',' ? end + 1 : end;
        }
        rc = run(method, atof(argv[6]), atof(argv[7]), vr, is_int, nout);
    } else if (strcmp(argv[1], "bench") == 0 && argc >= 7) {
        rc = bench(atol(argv[5]), atof(argv[6]));
    } else {
        die("unknown command or missing arguments: %s", argv[1]);
    }
    check(api.Terminate(comp), "fmi2Terminate");
    api.FreeInstance(comp);
    return rc;
}
