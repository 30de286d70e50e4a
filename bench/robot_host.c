/*
 * robot_host: a native FMU's 1 ms steps with several inputs, from C (bench/robot_step.py).
 *
 * usage: robot_host FMU_DIR GUID MODEL_IDENTIFIER STEP N IN_VRS OUT_VRS [R:VR=VALUE | S:VR=TEXT ...]
 *
 * Parameters R:vr=value (Real) and S:vr=text (String) are set in initialisation mode. Then N
 * communication steps of STEP: setReal of every input (0, held), doStep, getReal of the
 * outputs. Prints "cpu_us_per_step=..." (CPU time of the N steps after 200 warm-up steps, which
 * are not timed) and "y=..." (the outputs at the end, %.17g, comma separated).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/c_host/fmi2_types.h"

#define MAXV 256
#define fmi2True 1

typedef fmi2Component fmi2InstantiateTYPE(fmi2String, fmi2Type, fmi2String, fmi2String,
                                          const fmi2CallbackFunctions *, fmi2Boolean,
                                          fmi2Boolean);
typedef fmi2Status fmi2SetupExperimentTYPE(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real,
                                           fmi2Boolean, fmi2Real);
typedef fmi2Status fmi2ComponentTYPE(fmi2Component);
typedef fmi2ComponentTYPE fmi2EnterInitializationModeTYPE, fmi2ExitInitializationModeTYPE;
typedef fmi2Status fmi2SetRealTYPE(fmi2Component, const fmi2ValueReference *, size_t,
                                   const fmi2Real *);
typedef fmi2Status fmi2GetRealTYPE(fmi2Component, const fmi2ValueReference *, size_t,
                                   fmi2Real *);
typedef fmi2Status fmi2SetStringTYPE(fmi2Component, const fmi2ValueReference *, size_t,
                                     const fmi2String *);
typedef fmi2Status fmi2DoStepTYPE(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
typedef void fmi2FreeInstanceTYPE(fmi2Component);

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env;
    (void)category;
    if (status != fmi2OK)
        fprintf(stderr, "[%d] %s: %s\n", (int)status, name ? name : "", message);
}

static void die(const char *what)
{
    fprintf(stderr, "robot_host: %s\n", what);
    exit(1);
}

static int vrs(const char *s, fmi2ValueReference *vr)
{
    int n = 0;
    while (*s && n < MAXV) {
        char *end;
        vr[n++] = (fmi2ValueReference)strtoul(s, &end, 10);
        if (end == s)
            break;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 8)
        die("usage: robot_host FMU_DIR GUID MODEL_IDENTIFIER STEP N IN_VRS OUT_VRS [params]");
    char lib[4096], uri[4200];
    snprintf(lib, sizeof lib, "%s/binaries/linux64/%s.so", argv[1], argv[3]);
    snprintf(uri, sizeof uri, "file://%s/resources", argv[1]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die(dlerror());
#define SYM(T, name) T name = (T)dlsym(h, #name); if (!name) die("missing " #name)
    SYM(fmi2InstantiateTYPE *, fmi2Instantiate);
    SYM(fmi2SetupExperimentTYPE *, fmi2SetupExperiment);
    SYM(fmi2EnterInitializationModeTYPE *, fmi2EnterInitializationMode);
    SYM(fmi2ExitInitializationModeTYPE *, fmi2ExitInitializationMode);
    SYM(fmi2SetRealTYPE *, fmi2SetReal);
    SYM(fmi2SetStringTYPE *, fmi2SetString);
    SYM(fmi2GetRealTYPE *, fmi2GetReal);
    SYM(fmi2DoStepTYPE *, fmi2DoStep);
    SYM(fmi2FreeInstanceTYPE *, fmi2FreeInstance);
    fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};
    fmi2Component c = fmi2Instantiate("robot", fmi2CoSimulation, argv[2], uri, &cb, 0, 0);
    if (!c)
        die("fmi2Instantiate returned NULL");
    if (fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) != fmi2OK ||
        fmi2EnterInitializationMode(c) != fmi2OK)
        die("initialisation");
    for (int a = 8; a < argc; a++) {
        const char *eq = strchr(argv[a], '=');
        if (!eq || strlen(argv[a]) < 4 || argv[a][1] != ':')
            die("a parameter is R:VR=VALUE or S:VR=TEXT");
        fmi2ValueReference vr = (fmi2ValueReference)strtoul(argv[a] + 2, NULL, 10);
        fmi2Status st;
        if (argv[a][0] == 'R') {
            fmi2Real v = strtod(eq + 1, NULL);
            st = fmi2SetReal(c, &vr, 1, &v);
        } else {
            fmi2String v = eq + 1;
            st = fmi2SetString(c, &vr, 1, &v);
        }
        if (st != fmi2OK)
            die("a parameter was refused");
    }
    if (fmi2ExitInitializationMode(c) != fmi2OK)
        die("fmi2ExitInitializationMode");
    double step = strtod(argv[4], NULL);
    long n = strtol(argv[5], NULL, 10);
    fmi2ValueReference in[MAXV], out[MAXV];
    int nin = vrs(argv[6], in), nout = vrs(argv[7], out);
    fmi2Real u[MAXV] = {0}, y[MAXV];
    double t = 0.0, t0 = 0.0;
    for (long k = 0; k < n + 200; k++) {
        if (k == 200)
            t0 = cpu();
        if (fmi2SetReal(c, in, nin, u) != fmi2OK || fmi2DoStep(c, t, step, fmi2True) != fmi2OK ||
            fmi2GetReal(c, out, nout, y) != fmi2OK)
            die("a step failed");
        t = (k + 1) * step;
    }
    printf("cpu_us_per_step=%.6g\n", 1e6 * (cpu() - t0) / (double)n);
    printf("y=");
    for (int i = 0; i < nout; i++)
        printf(i ? ",%.17g" : "%.17g", y[i]);
    printf("\n");
    fmi2FreeInstance(c);
    return 0;
}
