/*
 * native_host: checks and timings of a native fmu_mb FMU from C (tests/test_native_fmu.py,
 * bench/native_fmu.py). The FMI 2.0 types are declared here so that no header is needed.
 *
 * usage: native_host COMMAND FMU_DIR GUID MODEL_IDENTIFIER [ARGS...]
 *
 *   run STOP STEP IN_VR OUT_VRS [FILE]     one run from t = 0; input IN_VR (-1: none) set
 *                                          before step k to line k of FILE (held over the
 *                                          step), or to 2 t - t^2 / 2 without FILE; prints
 *                                          "t,y1,y2,..." per communication point (%.17g)
 *   threads STOP STEP OUT_VRS N            N instances in N threads and the same N runs one
 *                                          after the other: "identical=1" when every thread's
 *                                          outputs equal the sequential run's bit for bit
 *   reload STOP STEP OUT_VRS               instance A runs half way; the library is dlclosed,
 *                                          its old address range blocked, re-dlopened (at
 *                                          another address) and A finishes through the new
 *                                          mapping; a new instance B runs too: "relocated=1
 *                                          identical=1" when A's and B's outputs equal an
 *                                          uninterrupted run's
 *   cycles N                               N x (instantiate, setup, init, one 1 ms step, free):
 *                                          the resident set size after 100, N/2 and N cycles
 *   bench STEP N IN_VR OUT_VRS [FILE]      N steps of (setReal input, doStep, getReal outputs):
 *                                          "cpu_us_per_step=..." (CPU time, after 200 warm-up
 *                                          steps); the input 0.1, or line k of FILE at step
 *                                          k (warm-up steps from its start)
 *   startup                                instantiate, setup, init, one 1 ms step in this fresh
 *                                          process: "instantiate_to_first_step_ms=..." (CPU and
 *                                          wall, dlopen included: "dlopen_ms=..."), and the
 *                                          CPU time of each phase: cpu_dlopen_ms,
 *                                          cpu_instantiate_ms, cpu_init_ms (setup, enter and
 *                                          exit initialization mode), cpu_step_ms
 *
 * Every status other than fmi2OK is printed to stderr and exits non-zero.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fmi2_types.h"

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
    fmi2Status (*SetReal)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Real*);
    fmi2Status (*GetReal)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*);
    fmi2Status (*DoStep)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);
} Api;

static const char* g_dir;
static const char* g_guid;
static char g_lib[8300];
static char g_uri[8300];

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
    if (s != fmi2OK) {
        die("%s returned status %d", what, (int)s);
    }
}

static void load(Api* api)
{
    api->handle = dlopen(g_lib, RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        die("dlopen %s: %s", g_lib, dlerror());
    }
#define SYM(n) do { *(void**)(&api->n) = dlsym(api->handle, "fmi2" #n); \
                    if (!api->n) die("no fmi2" #n); } while (0)
    SYM(Instantiate); SYM(FreeInstance); SYM(SetupExperiment); SYM(EnterInitializationMode);
    SYM(ExitInitializationMode); SYM(Terminate); SYM(SetReal); SYM(GetReal); SYM(DoStep);
#undef SYM
}

static fmi2Component start(const Api* api, const char* name)
{
    fmi2Component c = api->Instantiate(name, fmi2CoSimulation, g_guid, g_uri, &callbacks, 0, 0);
    if (!c) {
        die("fmi2Instantiate returned NULL");
    }
    check(api->SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), "fmi2SetupExperiment");
    check(api->EnterInitializationMode(c), "fmi2EnterInitializationMode");
    check(api->ExitInitializationMode(c), "fmi2ExitInitializationMode");
    return c;
}

static int parse_vrs(const char* s, fmi2ValueReference* vr, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char* end;
        vr[n++] = (fmi2ValueReference)strtoul(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s) {
            break;
        }
    }
    return n;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE* f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) {
            rss = 0;
        }
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* the road-like input of the runs: a smooth function of time */
static double input_at(double t) { return 2.0 * t - 0.5 * t * t; }

static const double* g_inputs;   /* per-step input values (run FILE), or NULL */
static int g_n_inputs;

static void read_inputs(const char* path, int n)
{
    FILE* f = fopen(path, "r");
    if (!f) {
        die("cannot read %s", path);
    }
    double* v = calloc((size_t)n + 1, sizeof(double));
    int m = 0;
    while (m <= n && fscanf(f, "%lf", &v[m]) == 1) {
        m++;
    }
    fclose(f);
    if (m == 0) {
        die("no input values in %s", path);
    }
    g_inputs = v;
    g_n_inputs = m;
}

/* One run of n steps of size h from t = 0 on instance c, outputs into out (n x nout). */
static void steps(const Api* api, fmi2Component c, int k0, int k1, double h,
                  const fmi2ValueReference* in_vr, const fmi2ValueReference* vr, int nout,
                  double* out)
{
    for (int k = k0; k < k1; ++k) {
        double t = k * h;
        if (in_vr) {
            double u = g_inputs ? g_inputs[k < g_n_inputs ? k : g_n_inputs - 1] : input_at(t);
            check(api->SetReal(c, in_vr, 1, &u), "fmi2SetReal");
        }
        check(api->DoStep(c, t, h, 1), "fmi2DoStep");
        check(api->GetReal(c, vr, (size_t)nout, out + (size_t)k * nout), "fmi2GetReal");
    }
}

typedef struct {
    const Api* api;
    int n;
    double h;
    const fmi2ValueReference* vr;
    int nout;
    double* out;
    char name[32];
} Job;

static void* thread_run(void* arg)
{
    Job* j = arg;
    fmi2Component c = start(j->api, j->name);
    steps(j->api, c, 0, j->n, j->h, NULL, j->vr, j->nout, j->out);
    j->api->Terminate(c);
    j->api->FreeInstance(c);
    return NULL;
}

/* The address range of the mapped library (from /proc/self/maps). */
static int mapped_range(uintptr_t* lo, uintptr_t* hi)
{
    FILE* f = fopen("/proc/self/maps", "r");
    char line[8192];
    int found = 0;
    *lo = UINTPTR_MAX;
    *hi = 0;
    char real[8300];
    if (!realpath(g_lib, real)) {
        snprintf(real, sizeof real, "%s", g_lib);
    }
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, real)) {
            unsigned long a, b;
            if (sscanf(line, "%lx-%lx", &a, &b) == 2) {
                if (a < *lo) *lo = a;
                if (b > *hi) *hi = b;
                found = 1;
            }
        }
    }
    if (f) {
        fclose(f);
    }
    return found;
}

int main(int argc, char** argv)
{
    if (argc < 5) {
        die("usage: native_host COMMAND FMU_DIR GUID MODEL_IDENTIFIER [ARGS...]");
    }
    const char* cmd = argv[1];
    g_dir = argv[2];
    g_guid = argv[3];
    char abs[4096];
    if (!realpath(g_dir, abs)) {
        die("no folder %s", g_dir);
    }
    snprintf(g_lib, sizeof g_lib, "%s/binaries/linux64/%s.so", abs, argv[4]);
    snprintf(g_uri, sizeof g_uri, "file://%s/resources", abs);
    fmi2ValueReference vr[256], in_vr[1];
    Api api;

    if (strcmp(cmd, "run") == 0 && argc >= 9) {
        double stop = atof(argv[5]), h = atof(argv[6]);
        long in = atol(argv[7]);
        int nout = parse_vrs(argv[8], vr, 256);
        int n = (int)(stop / h + 0.5);
        load(&api);
        fmi2Component c = start(&api, "run");
        double* out = calloc((size_t)n * nout + 1, sizeof(double));
        in_vr[0] = (fmi2ValueReference)in;
        if (argc >= 10) {
            read_inputs(argv[9], n);
        }
        double y0[256];
        check(api.GetReal(c, vr, (size_t)nout, y0), "fmi2GetReal");
        printf("%.17g", 0.0);
        for (int i = 0; i < nout; ++i) printf(",%.17g", y0[i]);
        printf("\n");
        steps(&api, c, 0, n, h, in >= 0 ? in_vr : NULL, vr, nout, out);
        for (int k = 0; k < n; ++k) {
            printf("%.17g", (k + 1) * h);
            for (int i = 0; i < nout; ++i) printf(",%.17g", out[(size_t)k * nout + i]);
            printf("\n");
        }
        api.Terminate(c);
        api.FreeInstance(c);
        free(out);
        return 0;
    }
    if (strcmp(cmd, "threads") == 0 && argc >= 9) {
        double stop = atof(argv[5]), h = atof(argv[6]);
        int nout = parse_vrs(argv[7], vr, 256);
        int nt = atoi(argv[8]);
        int n = (int)(stop / h + 0.5);
        load(&api);
        Job* jobs = calloc((size_t)nt, sizeof(Job));
        pthread_t* th = calloc((size_t)nt, sizeof(pthread_t));
        for (int i = 0; i < nt; ++i) {
            jobs[i] = (Job){&api, n, h, vr, nout, calloc((size_t)n * nout, sizeof(double)), ""};
            snprintf(jobs[i].name, sizeof jobs[i].name, "thread%d", i);
            pthread_create(&th[i], NULL, thread_run, &jobs[i]);
        }
        for (int i = 0; i < nt; ++i) {
            pthread_join(th[i], NULL);
        }
        Job ref = {&api, n, h, vr, nout, calloc((size_t)n * nout, sizeof(double)), "sequential"};
        thread_run(&ref);
        int same = 1;
        for (int i = 0; i < nt; ++i) {
            same &= memcmp(jobs[i].out, ref.out, (size_t)n * nout * sizeof(double)) == 0;
        }
        printf("identical=%d threads=%d steps=%d last=%.17g\n", same, nt, n,
               ref.out[(size_t)(n - 1) * nout]);
        return same ? 0 : 1;
    }
    if (strcmp(cmd, "reload") == 0 && argc >= 8) {
        double stop = atof(argv[5]), h = atof(argv[6]);
        int nout = parse_vrs(argv[7], vr, 256);
        int n = (int)(stop / h + 0.5), half = n / 2;
        double* ref = calloc((size_t)n * nout, sizeof(double));
        double* a = calloc((size_t)n * nout, sizeof(double));
        double* b = calloc((size_t)n * nout, sizeof(double));
        load(&api);
        fmi2Component r = start(&api, "reference");
        steps(&api, r, 0, n, h, NULL, vr, nout, ref);
        api.FreeInstance(r);
        fmi2Component A = start(&api, "A");
        steps(&api, A, 0, half, h, NULL, vr, nout, a);
        uintptr_t lo, hi;
        if (!mapped_range(&lo, &hi)) {
            die("the library is not in /proc/self/maps");
        }
        if (dlclose(api.handle) != 0) {
            die("dlclose: %s", dlerror());
        }
        uintptr_t lo2, hi2;
        int still = mapped_range(&lo2, &hi2);
        void* block = MAP_FAILED;
        if (!still) {   /* keep the old range busy so that the library maps elsewhere */
            block = mmap((void*)lo, hi - lo, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        }
        load(&api);
        uintptr_t lo3, hi3;
        mapped_range(&lo3, &hi3);
        int relocated = !still && lo3 != lo;
        steps(&api, A, half, n, h, NULL, vr, nout, a);
        api.FreeInstance(A);
        fmi2Component B = start(&api, "B");
        steps(&api, B, 0, n, h, NULL, vr, nout, b);
        api.FreeInstance(B);
        size_t bytes = (size_t)n * nout * sizeof(double);
        int same = memcmp(a, ref, bytes) == 0 && memcmp(b, ref, bytes) == 0;
        printf("relocated=%d identical=%d unmapped=%d\n", relocated, same, !still);
        if (block != MAP_FAILED) {
            munmap(block, hi - lo);
        }
        return same ? 0 : 1;
    }
    if (strcmp(cmd, "cycles") == 0 && argc >= 6) {
        int n = atoi(argv[5]);
        load(&api);
        long first = 0, half = 0;
        for (int i = 0; i < n; ++i) {
            fmi2Component c = start(&api, "cycle");
            check(api.DoStep(c, 0.0, 1e-3, 1), "fmi2DoStep");
            api.Terminate(c);
            api.FreeInstance(c);
            if (i == 99) {
                first = rss_kb();
            }
            if (i == n / 2 - 1) {
                half = rss_kb();
            }
        }
        printf("rss_kb_after_100=%ld rss_kb_after_half=%ld rss_kb_after_all=%ld cycles=%d\n",
               first, half, rss_kb(), n);
        return 0;
    }
    if (strcmp(cmd, "bench") == 0 && argc >= 9) {
        double h = atof(argv[5]);
        int n = atoi(argv[6]);
        long in = atol(argv[7]);
        int nout = parse_vrs(argv[8], vr, 256);
        in_vr[0] = (fmi2ValueReference)in;
        if (argc >= 10) {
            read_inputs(argv[9], n);
        }
        load(&api);
        fmi2Component c = start(&api, "bench");
        double y[256];
        int warm = 200;
        double t0 = 0.0;
        for (int k = 0; k < n + warm; ++k) {
            if (k == warm) {
                t0 = cpu_now();
            }
            double t = k * h;
            double u = g_inputs ? g_inputs[(k < warm ? k : k - warm) % g_n_inputs] : 0.1;
            if (in >= 0) {
                check(api.SetReal(c, in_vr, 1, &u), "fmi2SetReal");
            }
            check(api.DoStep(c, t, h, 1), "fmi2DoStep");
            check(api.GetReal(c, vr, (size_t)nout, y), "fmi2GetReal");
        }
        double cpu = cpu_now() - t0;
        printf("cpu_us_per_step=%.4f steps=%d last=%.17g\n", 1e6 * cpu / n, n, y[0]);
        api.FreeInstance(c);
        return 0;
    }
    if (strcmp(cmd, "startup") == 0) {
        double w0 = wall_now(), c0 = cpu_now();
        load(&api);
        double w1 = wall_now(), c1 = cpu_now();
        fmi2Component c = api.Instantiate("startup", fmi2CoSimulation, g_guid, g_uri,
                                          &callbacks, 0, 0);
        if (!c) {
            die("fmi2Instantiate returned NULL");
        }
        double ci = cpu_now();
        check(api.SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), "fmi2SetupExperiment");
        check(api.EnterInitializationMode(c), "fmi2EnterInitializationMode");
        check(api.ExitInitializationMode(c), "fmi2ExitInitializationMode");
        double ce = cpu_now();
        check(api.DoStep(c, 0.0, 1e-3, 1), "fmi2DoStep");
        double w2 = wall_now(), c2 = cpu_now();
        printf("dlopen_ms=%.4f instantiate_to_first_step_ms=%.4f cpu_ms=%.4f "
               "cpu_dlopen_ms=%.4f cpu_instantiate_ms=%.4f cpu_init_ms=%.4f cpu_step_ms=%.4f\n",
               1e3 * (w1 - w0), 1e3 * (w2 - w1), 1e3 * (c2 - c0), 1e3 * (c1 - c0),
               1e3 * (ci - c1), 1e3 * (ce - ci), 1e3 * (c2 - ce));
        api.FreeInstance(c);
        return 0;
    }
    die("unknown command or missing arguments: %s", cmd);
    return 2;
}
