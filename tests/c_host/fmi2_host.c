/*
 * fmi2_host: a minimal generic FMI 2.0 co-simulation master for tests.
 *
 * usage: fmi2_host FMU_DIR GUID MODEL_IDENTIFIER STOP_TIME STEP
 *                  [--set VR=VALUE]... [--input VR=VALUE]... --out VR[,VR...]
 *                  [--runs N]
 *
 *   FMU_DIR           an extracted FMU (absolute or relative path)
 *   --set VR=VALUE    fmi2SetReal before fmi2EnterInitializationMode
 *   --input VR=VALUE  fmi2SetReal before every fmi2DoStep
 *   --out VRS         real variables printed after initialisation and after
 *                     every step, as CSV "run,time,v1,v2,..." on stdout
 *   --runs N          number of complete runs in this process (default 2)
 *
 * The binary FMU_DIR/binaries/linux64/MODEL_IDENTIFIER.so is dlopen()ed once
 * with RTLD_NOW | RTLD_LOCAL; each run instantiates (resource location
 * file://<absolute FMU_DIR>/resources), sets up the experiment, initialises,
 * steps to STOP_TIME, terminates and frees the instance.  The wall time of the
 * first fmi2Instantiate plus the first fmi2DoStep is printed to stderr as
 * "first_instantiate_and_step_seconds=<t>".  Any status other than fmi2OK or
 * fmi2Warning is reported on stderr and gives a non-zero exit code.
 *
 * The FMI 2.0 types are declared in fmi2_types.h beside it, so that no FMI header is needed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2_types.h"

typedef fmi2Component (*InstantiateFn)(fmi2String, fmi2Type, fmi2String, fmi2String,
                                       const fmi2CallbackFunctions*, fmi2Boolean, fmi2Boolean);
typedef void (*FreeInstanceFn)(fmi2Component);
typedef fmi2Status (*SetupExperimentFn)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real,
                                        fmi2Boolean, fmi2Real);
typedef fmi2Status (*ComponentFn)(fmi2Component);
typedef fmi2Status (*SetRealFn)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Real*);
typedef fmi2Status (*GetRealFn)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*);
typedef fmi2Status (*DoStepFn)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);

typedef struct {
    InstantiateFn instantiate;
    FreeInstanceFn free_instance;
    SetupExperimentFn setup_experiment;
    ComponentFn enter_initialization_mode;
    ComponentFn exit_initialization_mode;
    ComponentFn terminate;
    SetRealFn set_real;
    GetRealFn get_real;
    DoStepFn do_step;
} Api;

typedef struct {
    fmi2ValueReference* vr;
    fmi2Real* value;
    size_t n;
} RealList;

static const char* status_name(fmi2Status s)
{
    static const char* names[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};
    return (s >= fmi2OK && s <= fmi2Pending) ? names[s] : "unknown";
}

static void logger(fmi2ComponentEnvironment env, fmi2String instance, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env;
    va_list args;
    va_start(args, message);
    fprintf(stderr, "[%s] %s %s: ", status_name(status), instance ? instance : "?",
            category ? category : "");
    vfprintf(stderr, message ? message : "", args);
    fputc('\n', stderr);
    va_end(args);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: fmi2_host FMU_DIR GUID MODEL_IDENTIFIER STOP_TIME STEP "
            "[--set VR=VALUE]... [--input VR=VALUE]... --out VR[,VR...] [--runs N]\n");
}

static int parse_double(const char* text, double* out)
{
    char* end = NULL;
    errno = 0;
    *out = strtod(text, &end);
    return errno == 0 && end != text && *end == '\0';
}

static int parse_vr(const char* text, const char** rest, fmi2ValueReference* out)
{
    char* end = NULL;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || end == text || v > 0xFFFFFFFFul) {
        return 0;
    }
    *out = (fmi2ValueReference)v;
    *rest = end;
    return 1;
}

static int append(RealList* list, fmi2ValueReference vr, fmi2Real value)
{
    fmi2ValueReference* vrs = realloc(list->vr, (list->n + 1) * sizeof *vrs);
    if (vrs == NULL) {
        return 0;
    }
    list->vr = vrs;
    fmi2Real* values = realloc(list->value, (list->n + 1) * sizeof *values);
    if (values == NULL) {
        return 0;
    }
    list->value = values;
    list->vr[list->n] = vr;
    list->value[list->n] = value;
    list->n++;
    return 1;
}

/* "VR=VALUE" */
static int parse_assignment(const char* text, RealList* list)
{
    const char* rest = NULL;
    fmi2ValueReference vr;
    double value;
    if (!parse_vr(text, &rest, &vr) || *rest != '=' || !parse_double(rest + 1, &value)) {
        fprintf(stderr, "fmi2_host: expected VR=VALUE, got '%s'\n", text);
        return 0;
    }
    return append(list, vr, value);
}

/* "VR,VR,..." */
static int parse_vr_list(const char* text, RealList* list)
{
    const char* p = text;
    for (;;) {
        fmi2ValueReference vr;
        const char* rest = NULL;
        if (!parse_vr(p, &rest, &vr) || (*rest != ',' && *rest != '\0')) {
            fprintf(stderr, "fmi2_host: expected VR[,VR...], got '%s'\n", text);
            return 0;
        }
        if (!append(list, vr, 0.0)) {
            return 0;
        }
        if (*rest == '\0') {
            return 1;
        }
        p = rest + 1;
    }
}

static void* load_symbol(void* lib, const char* name)
{
    void* sym = dlsym(lib, name);
    if (sym == NULL) {
        fprintf(stderr, "fmi2_host: missing symbol %s: %s\n", name, dlerror());
    }
    return sym;
}

static int load_api(void* lib, Api* api)
{
    api->instantiate = (InstantiateFn)load_symbol(lib, "fmi2Instantiate");
    api->free_instance = (FreeInstanceFn)load_symbol(lib, "fmi2FreeInstance");
    api->setup_experiment = (SetupExperimentFn)load_symbol(lib, "fmi2SetupExperiment");
    api->enter_initialization_mode = (ComponentFn)load_symbol(lib, "fmi2EnterInitializationMode");
    api->exit_initialization_mode = (ComponentFn)load_symbol(lib, "fmi2ExitInitializationMode");
    api->terminate = (ComponentFn)load_symbol(lib, "fmi2Terminate");
    api->set_real = (SetRealFn)load_symbol(lib, "fmi2SetReal");
    api->get_real = (GetRealFn)load_symbol(lib, "fmi2GetReal");
    api->do_step = (DoStepFn)load_symbol(lib, "fmi2DoStep");
    return api->instantiate && api->free_instance && api->setup_experiment &&
           api->enter_initialization_mode && api->exit_initialization_mode && api->terminate &&
           api->set_real && api->get_real && api->do_step;
}

static int check(fmi2Status status, const char* call, int run)
{
    if (status == fmi2OK || status == fmi2Warning) {
        return 1;
    }
    fprintf(stderr, "fmi2_host: run %d: %s returned fmi2%s\n", run, call, status_name(status));
    return 0;
}

static int print_outputs(const Api* api, fmi2Component c, RealList* out, int run, double t)
{
    if (!check(api->get_real(c, out->vr, out->n, out->value), "fmi2GetReal", run)) {
        return 0;
    }
    printf("%d,%.17g", run, t);
    for (size_t i = 0; i < out->n; i++) {
        printf(",%.17g", out->value[i]);
    }
    putchar('\n');
    return 1;
}

/* One complete simulation run; returns 1 on success. */
static int simulate(const Api* api, const char* guid, const char* instance_name,
                    const char* resource_uri, double stop_time, double step, const RealList* set,
                    const RealList* input, RealList* out, int run, double* first_call_seconds)
{
    static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};

    double t0 = now_seconds();
    fmi2Component c = api->instantiate(instance_name, fmi2CoSimulation, guid, resource_uri,
                                       &callbacks, 0, 1);
    double instantiate_seconds = now_seconds() - t0;
    if (c == NULL) {
        fprintf(stderr, "fmi2_host: run %d: fmi2Instantiate returned NULL\n", run);
        return 0;
    }

    int ok = 1;
    ok = ok && check(api->setup_experiment(c, 0, 0.0, 0.0, 1, stop_time),
                     "fmi2SetupExperiment", run);
    if (ok && set->n > 0) {
        ok = check(api->set_real(c, set->vr, set->n, set->value), "fmi2SetReal", run);
    }
    ok = ok && check(api->enter_initialization_mode(c), "fmi2EnterInitializationMode", run);
    ok = ok && check(api->exit_initialization_mode(c), "fmi2ExitInitializationMode", run);
    ok = ok && print_outputs(api, c, out, run, 0.0);

    long n_steps = (long)(stop_time / step + 0.5);
    /* Communication points t_k = k * STEP as fmpy computes them, so that the
     * step sizes t_(k+1) - t_k are bit-identical to fmpy's. */
    for (long k = 0; ok && k < n_steps; k++) {
        double t = (double)k * step;
        double t_next = (double)(k + 1) * step;
        if (input->n > 0) {
            ok = check(api->set_real(c, input->vr, input->n, input->value), "fmi2SetReal", run);
        }
        double s0 = now_seconds();
        ok = ok && check(api->do_step(c, t, t_next - t, 1), "fmi2DoStep", run);
        if (k == 0 && first_call_seconds != NULL) {
            *first_call_seconds = instantiate_seconds + (now_seconds() - s0);
        }
        ok = ok && print_outputs(api, c, out, run, t_next);
    }

    if (ok) {
        ok = check(api->terminate(c), "fmi2Terminate", run);
    }
    api->free_instance(c);
    return ok;
}

int main(int argc, char** argv)
{
    if (argc < 6) {
        usage();
        return 2;
    }
    const char* fmu_dir = argv[1];
    const char* guid = argv[2];
    const char* model_identifier = argv[3];
    double stop_time, step;
    if (!parse_double(argv[4], &stop_time) || !parse_double(argv[5], &step) || step <= 0.0) {
        fprintf(stderr, "fmi2_host: STOP_TIME and STEP must be numbers, STEP > 0\n");
        return 2;
    }

    RealList set = {0}, input = {0}, out = {0};
    int runs = 2;
    for (int i = 6; i < argc; i++) {
        int has_value = i + 1 < argc;
        if (strcmp(argv[i], "--set") == 0 && has_value) {
            if (!parse_assignment(argv[++i], &set)) return 2;
        } else if (strcmp(argv[i], "--input") == 0 && has_value) {
            if (!parse_assignment(argv[++i], &input)) return 2;
        } else if (strcmp(argv[i], "--out") == 0 && has_value) {
            if (!parse_vr_list(argv[++i], &out)) return 2;
        } else if (strcmp(argv[i], "--runs") == 0 && has_value) {
            runs = atoi(argv[++i]);
            if (runs < 1) {
                fprintf(stderr, "fmi2_host: --runs must be >= 1\n");
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    if (out.n == 0) {
        fprintf(stderr, "fmi2_host: --out is required\n");
        return 2;
    }

    char abs_dir[PATH_MAX];
    if (realpath(fmu_dir, abs_dir) == NULL) {
        fprintf(stderr, "fmi2_host: cannot resolve FMU_DIR '%s': %s\n", fmu_dir, strerror(errno));
        return 2;
    }
    char library[PATH_MAX + 256];
    snprintf(library, sizeof library, "%s/binaries/linux64/%s.so", abs_dir, model_identifier);
    /* pythonfmu strips "file://" and decodes only %20, so the path is kept as
     * it is apart from spaces. */
    char resource_uri[3 * PATH_MAX + 32];
    {
        char* w = resource_uri;
        w += sprintf(w, "file://");
        for (const char* r = abs_dir; *r; r++) {
            if (*r == ' ') {
                w += sprintf(w, "%%20");
            } else {
                *w++ = *r;
            }
        }
        sprintf(w, "/resources");
    }

    void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "fmi2_host: dlopen failed: %s\n", dlerror());
        return 3;
    }
    Api api;
    if (!load_api(lib, &api)) {
        return 3;
    }

    printf("run,time");
    for (size_t i = 0; i < out.n; i++) {
        printf(",vr%u", out.vr[i]);
    }
    putchar('\n');

    int status = 0;
    double first_call_seconds = -1.0;
    for (int run = 1; run <= runs && status == 0; run++) {
        char instance_name[64];
        snprintf(instance_name, sizeof instance_name, "instance%d", run);
        if (!simulate(&api, guid, instance_name, resource_uri, stop_time, step, &set, &input, &out,
                      run, run == 1 ? &first_call_seconds : NULL)) {
            status = 1;
        }
        fflush(stdout);
    }
    fprintf(stderr, "first_instantiate_and_step_seconds=%.6f\n", first_call_seconds);

    free(set.vr);
    free(set.value);
    free(input.vr);
    free(input.value);
    free(out.vr);
    free(out.value);
    /* Unload explicitly.  pythonfmu 0.7.0 finalises Python from a static
     * destructor and again from an ELF destructor; when exit() unloads the
     * library instead, the static one runs first and the ELF one then uses the
     * destroyed std::shared_ptr (use after free, an occasional
     * "free(): corrupted unsorted chunks" abort at exit).  dlclose() runs them
     * in the safe order. */
    if (dlclose(lib) != 0) {
        fprintf(stderr, "fmi2_host: dlclose failed: %s\n", dlerror());
        status = status ? status : 3;
    }
    return status;
}
