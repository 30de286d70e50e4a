/*
 * fmu_mb native FMU: the FMI 2.0 co-simulation interface over the compiled engine
 * (fmu_mb/engine/native/engine.h). No Python, no numpy: the binary needs libc and libm only.
 *
 * fmu_mb.fmi.native_build writes one header per FMU, fmu_model.h (the model's variable table,
 * the model-data blob of fmu_mb.engine.data and the GUID), that this file includes; the engine's
 * sources are compiled beside it with -fvisibility=hidden, and only the fmi2* functions are
 * exported (a linker version script).
 *
 * Promises (docs/fmi-statuses.md; tests/test_native_fmu.py checks each):
 *   - no global mutable state (but the hints of live_object, a cache that any reload may
 *     lose): everything lives in the instance; the instance holds no pointer
 *     into this library's static memory (the tables are read through their indices at every
 *     call, strings are copied), so instances may live in separate threads and a host may
 *     dlclose and re-dlopen the library between calls (ecospy's loader does);
 *   - the FMI 2.0 co-simulation state machine: a call it does not allow returns fmi2Error and
 *     changes nothing; the instance stays usable after fmi2Error and after fmi2Discard;
 *   - every status other than fmi2OK is logged with its reason even with loggingOn = false;
 *     fmi2Fatal is never returned;
 *   - NULL or non-UTF-8 instance names and string values are refused with a message; a wrong
 *     GUID is refused; the resource location is not used (any form, or NULL);
 *   - value references that do not exist (also 2^31 and above) are refused, naming their
 *     unsigned value;
 *   - a doStep that fails in the model (lock-up, runaway state, work or step budget: the same
 *     call would fail again) returns MODEL_FAILURE_STATUS, fmi2Error in FMI 2.0 (so that
 *     masters such as fmpy's simulate_fmu stop with an error instead of retrying or returning
 *     a short result) and fmi3Discard with terminateSimulation in FMI 3.0; either way the state
 *     from before the call is kept, the instance stays usable (other inputs, a restored state)
 *     and fmi2GetBooleanStatus(fmi2Terminated) is true; a step refused for a wrong step size
 *     or time is fmi2Discard with fmi2Terminated false (docs/fmi-statuses.md);
 *     fmi2GetRealStatus(fmi2LastSuccessfulTime) is the end of the last successful step; a
 *     doStep past a defined stop time returns fmi2Error;
 *   - an FMU state is the serialized bytes themselves: a magic, a format version, the GUID,
 *     the values, the engine's state and a checksum; every restored value is checked before
 *     use and a state that fails any check is refused with fmi2Error, changing nothing;
 *   - every doStep is bounded by the engine's work budget (counted work, about 1 s), whatever
 *     solver.max_steps and the inputs say.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
#else
#include <unistd.h>
int mincore(void* addr, size_t length, unsigned char* vec);   /* <sys/mman.h>, libc */
#endif

/* The exported FMI functions (platforms: a Windows DLL exports the marked ones only; the FMI
 * 3.0 front fmi3_native.c includes this file with EXPORT defined as static). */
#ifndef EXPORT
#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif
#endif

/* ------------------------------------------------------------------ FMI 2.0 types */
typedef void* fmi2Component;
typedef void* fmi2ComponentEnvironment;
typedef void* fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char* fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;

/* the status of a doStep that fails in the model (see above); fmi3_native.c sets fmi2Discard */
#ifndef MODEL_FAILURE_STATUS
#define MODEL_FAILURE_STATUS fmi2Error
#endif
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime,
               fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String,
                                   fmi2String, ...);
typedef struct {
    fmi2CallbackLogger logger;
    void* (*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void*);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

/* ------------------------------------------------------------------ the variable table
 * fmu_model.h is generated per FMU by fmu_mb.fmi.native_build: FMU_GUID, FMU_MODEL_NAME, the
 * counts FMU_N_VARS/PARAMS/INPUTS/OUTPUTS, FMU_VARS (indexed by value reference),
 * FMU_PARAM_DEFAULTS (the engine's parameter vector as built), FMU_DATA/FMU_DATA_SIZE (the model
 * data blob of fmu_mb.engine.data), FMU_START_TIME, the solver settings the FMU does not expose
 * (FMU_MAX_STEP, FMU_BAUMGARTE_ALPHA/BETA, FMU_PROJECTION_TOL), the names the Python FMU knows
 * (FMU_PY_METHODS, FMU_PY_FORMULATIONS, FMU_DAE_FORMS) and FMU_LOG_CATEGORIES. */
enum { VT_REAL, VT_INTEGER, VT_BOOLEAN, VT_STRING };

enum {
    VK_PARAM,     /* model parameter: index into the engine's parameter vector           */
    VK_FIXED,     /* model parameter fixed at build time (structural, or not compiled)    */
    VK_SOLVER,    /* solver setting: index is a SOLVER_* id                               */
    VK_INPUT,     /* input: index into u                                                  */
    VK_OUTPUT,    /* output: index into the engine's outputs                              */
    VK_STATE,     /* state of the linear model that is no output: index into x            */
    VK_DERIV      /* der(state): index into x = (q_i, qd_i) of FMU_IND                    */
};

enum { SOLVER_METHOD, SOLVER_FORMULATION, SOLVER_STABILIZATION, SOLVER_RTOL, SOLVER_ATOL,
       SOLVER_STEP, SOLVER_RHO_INF, SOLVER_NEWTON_TOL, SOLVER_DAE_FORM, SOLVER_MAX_STEPS,
       SOLVER_CONTACT_TOL, SOLVER_CONTACT_VELOCITY, SOLVER_EVENT_TOL, /* contact models only */
       SOLVER_ASSEMBLY};

typedef struct {
    const char* name;
    int type, kind, index;
    double start;               /* Real, Integer, Boolean start (parameters, solver, inputs) */
    const char* start_string;   /* String start                                              */
    double min, max;            /* valid range (-inf, inf when none)                         */
    int structural;             /* VK_FIXED: a structural parameter                          */
    const char* fixed_reason;   /* VK_FIXED: why it cannot change in this FMU                */
} FmuVar;

#include "fmu_model.h"

#ifndef FMU_HAS_ME
#define FMU_HAS_ME 0                 /* model exchange (me2.c): the FMU declares states */
#endif

/* ------------------------------------------------------------------ instance */
enum { INSTANTIATED = 1, INIT_MODE = 2, STEP_MODE = 4, TERMINATED = 8, ANY = 15 };

#define INSTANCE_MAGIC 0x4e464d55u   /* "UMFN" */
#define STATE_MAGIC 0x53464d55u      /* "UMFS" */
#define SER_MAGIC "FMMBSTAT"
#define SER_VERSION 1u
#define MSG 2048                     /* longest logged message */
#define ECHO 60                      /* at most this many bytes of a string value in a message */
#define TIME_BOUND 1e10              /* |t| of the FMU's time [s] (the Python FMU's TIME_BOUND) */
#define STATE_BOUND 1e12             /* |q|, |qd| of an initial state (the engine's step bound) */

typedef struct FmuState {
    unsigned magic;
    size_t size;
    unsigned char* bytes;
    struct FmuState* next;
} FmuState;

typedef struct {
    unsigned magic;
    int mode;
    int logging;
    char** categories;
    size_t n_categories;
    char* name;
    fmi2CallbackLogger logger;
    fmi2ComponentEnvironment env;

    MbEngine* engine;
    int configured;          /* the engine holds the initial state of the values below */
    int dirty;               /* a parameter, setting or the start time changed since */
    double* num;             /* value of every non-string variable that can be set (by index) */
    char** str;              /* value of every string variable (by index; NULL otherwise) */
    double start_time;
    int start_set;
    double* params;          /* scratch: the engine's parameter vector */
    double* applied;         /* the parameters the engine runs */
    int have_applied;
    double* u;               /* inputs in the engine's order */
    double* y;               /* outputs cache */
    int y_valid;             /* the output groups (MBE_GROUP_*) y holds for the current state */
    int* group;              /* the group of each output */
    double* scratch;         /* engine state scratch (size n_state) */
    size_t n_state;          /* the solver values of an FMU state: mbe_state_size, then for a
                                model-exchange instance its charts (mbe_me_chart_size) */
    size_t n_chart;
    FmuState* states;        /* states made by this instance */
    int stuck;               /* the last doStep was discarded in the model (fmi2Terminated) */
    int stop_defined;        /* fmi2SetupExperiment's stop time: no doStep may end after it */
    double stop_time;
    int me;                  /* made with fmi2ModelExchange (me2.c) */
    int me_mode;             /* ME_EVENT or ME_CT once initialised */
    int me_warned;           /* the partition's warning was logged (me2.c) */
    char err[MSG];
} Inst;


enum { ME_EVENT = 1, ME_CT = 2, ME_TERMINATED = 4 };   /* model exchange's modes (me2.c) */

/* ------------------------------------------------------------------ live instances
 * A host may pass a pointer that is no instance at all (0x1234, a freed one). A real check is
 * impossible in C; this best-effort one never reads memory that is not mapped: a pointer
 * below 64 KiB or misaligned is refused at once, a pointer recently seen as a live instance
 * is taken (SEEN hints, the one piece of this library's static memory that changes: a hint is
 * only a shortcut, written and read whole, cleared when its instance is freed, lost harmlessly
 * when a host reloads the library), and any other is first asked of the operating system
 * (mincore; VirtualQuery on Windows; a few microseconds) before its magic number is read. */
#define SEEN 32
static const void* volatile seen_ptr[SEEN];
static volatile unsigned seen_next;
#if defined(__GNUC__)
#define SEEN_GET(i) __atomic_load_n(&seen_ptr[i], __ATOMIC_RELAXED)
#define SEEN_SET(i, v) __atomic_store_n(&seen_ptr[i], (v), __ATOMIC_RELAXED)
#else
#define SEEN_GET(i) (seen_ptr[i])
#define SEEN_SET(i, v) (seen_ptr[i] = (v))
#endif

/* 1 when the n bytes at p are mapped readable memory (best effort, see above) */
static int mapped(const void* p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    if (a < 65536u || a % sizeof(void*) != 0 || a + n < a) {
        return 0;
    }
#if defined(_WIN32)
    MEMORY_BASIC_INFORMATION mbi;
    const DWORD readable = PAGE_READONLY | PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READ
                           | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY;
    if (VirtualQuery(p, &mbi, sizeof mbi) == 0 || mbi.State != MEM_COMMIT
        || !(mbi.Protect & readable) || (mbi.Protect & (PAGE_GUARD | PAGE_NOACCESS))) {
        return 0;
    }
    return (uintptr_t)mbi.BaseAddress + mbi.RegionSize >= a + n;
#else
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) {
        return 0;
    }
    uintptr_t page = a & ~(uintptr_t)(ps - 1);
    unsigned char vec[4];
    size_t len = (size_t)(a + n - page);
    if (len > 4 * (size_t)ps) {
        return 0;
    }
    return mincore((void*)page, len, vec) == 0;
#endif
}

/* 1 when p may be read as a struct whose first member is an unsigned magic equal to `magic` */
static int live_object(const void* p, unsigned magic)
{
    if (p == NULL) {
        return 0;
    }
    int known = 0;
    for (int i = 0; i < SEEN; ++i) {
        known |= SEEN_GET(i) == p;
    }
    if (!known && !mapped(p, sizeof(unsigned))) {
        return 0;
    }
    if (*(const unsigned*)p != magic) {
        return 0;
    }
    if (!known) {
        SEEN_SET(seen_next++ % SEEN, p);
    }
    return 1;
}

/* p is freed: no longer a hint */
static void forget_object(const void* p)
{
    for (int i = 0; i < SEEN; ++i) {
        if (SEEN_GET(i) == p) {
            SEEN_SET(i, NULL);
        }
    }
}

/* ------------------------------------------------------------------ utilities */
static int utf8_valid(const char* s, size_t* bad)
{
    const unsigned char* p = (const unsigned char*)s;
    size_t i = 0;
    while (p[i]) {
        unsigned c = p[i];
        size_t n;
        unsigned min;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xe0) == 0xc0) { n = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { n = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { n = 3; min = 0x10000; c &= 0x07; }
        else { *bad = i; return 0; }
        for (size_t k = 1; k <= n; ++k) {
            if ((p[i + k] & 0xc0) != 0x80) { *bad = i; return 0; }
            c = (c << 6) | (p[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) { *bad = i; return 0; }
        i += n + 1;
    }
    return 1;
}

/* A short, printable rendering of a (valid UTF-8) string for a message. */
static void echo(char* out, size_t cap, const char* s)
{
    size_t n = strlen(s);
    if (n <= ECHO) {
        snprintf(out, cap, "'%s'", s);
        return;
    }
    size_t cut = ECHO;
    while (cut > 0 && (((unsigned char)s[cut]) & 0xc0) == 0x80) {
        cut--;        /* do not split a character */
    }
    snprintf(out, cap, "'%.*s...' (%zu bytes)", (int)cut, s, n);
}

static char* dupstr(const char* s)
{
    size_t n = strlen(s) + 1;
    char* d = malloc(n);
    if (d) {
        memcpy(d, s, n);
    }
    return d;
}

static const char* name_of(const Inst* in) { return in->name ? in->name : ""; }

static int category_enabled(const Inst* in, const char* category)
{
    if (in->n_categories == 0) {
        return 1;
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        if (strcmp(in->categories[i], category) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Pass one message to the host; '%' doubled since hosts treat the message as a format. */
static void emit(fmi2CallbackLogger logger, fmi2ComponentEnvironment env, const char* name,
                 fmi2Status status, const char* category, const char* message)
{
    if (logger == NULL) {
        return;
    }
    char text[2 * MSG + 1];
    size_t j = 0;
    for (size_t i = 0; message[i] && j + 2 < sizeof text; ++i) {
        text[j++] = message[i];
        if (message[i] == '%') {
            text[j++] = '%';
        }
    }
    text[j] = '\0';
    logger(env, name, status, category, text);
}

static fmi2Status say(Inst* in, fmi2Status status, const char* fmt, ...)
{
    char text[MSG];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    const char* category = status == fmi2OK ? "logAll"
                         : status == fmi2Warning ? "logStatusWarning"
                         : status == fmi2Discard ? "logStatusDiscard"
                         : status == fmi2Error ? "logStatusError" : "logStatusFatal";
    if (status != fmi2OK || (in->logging && category_enabled(in, category))) {
        emit(in->logger, in->env, name_of(in), status, category, text);
    }
    return status;
}

static const char* mode_name(int m)
{
    switch (m) {
    case INSTANTIATED: return "instantiated";
    case INIT_MODE: return "initialization mode";
    case STEP_MODE: return "slave initialized (stepping)";
    case TERMINATED: return "terminated";
    default: return "unknown";
    }
}

static Inst* enter(fmi2Component c, const char* fn, int allowed)
{
    Inst* in = (Inst*)c;
    if (!live_object(in, INSTANCE_MAGIC)) {
        return NULL;    /* not an instance of this FMU: nothing to log through */
    }
    if (!(in->mode & allowed)) {
        char list[160] = "";
        const int all[] = {INSTANTIATED, INIT_MODE, STEP_MODE, TERMINATED};
        for (int i = 0; i < 4; ++i) {
            if (allowed & all[i]) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                         mode_name(all[i]));
            }
        }
        say(in, fmi2Error, "%s: not allowed in state '%s' (FMI 2.0 allows it in: %s); the call "
            "was refused and changed nothing", fn, mode_name(in->mode), list);
        return NULL;
    }
    return in;
}

static const char* type_name(int t)
{
    return t == VT_REAL ? "Real" : t == VT_INTEGER ? "Integer" : t == VT_BOOLEAN ? "Boolean"
                                                                                : "String";
}

/* ------------------------------------------------------------------ values */
static int settable(int kind) { return kind < VK_OUTPUT; }

static void reset_values(Inst* in)
{
    for (int i = 0; i < FMU_N_VARS; ++i) {
        const FmuVar* v = &FMU_VARS[i];
        if (v->type == VT_STRING) {
            free(in->str[i]);
            in->str[i] = dupstr(v->start_string);
        } else {
            in->num[i] = v->start;
        }
    }
    for (int k = 0; k < FMU_N_INPUTS; ++k) {
        in->u[k] = 0.0;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_INPUT) {
            in->u[FMU_VARS[i].index] = in->num[i];
        }
    }
    in->start_set = 0;
    in->start_time = FMU_START_TIME;
    in->stop_defined = 0;
    in->stuck = 0;
    in->configured = 0;
    in->dirty = 1;
    in->y_valid = 0;
}

static const char* solver_string(const Inst* in, int id)
{
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_SOLVER && FMU_VARS[i].index == id) {
            return in->str[i];
        }
    }
    return "";
}

static double solver_number(const Inst* in, int id)
{
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_SOLVER && FMU_VARS[i].index == id) {
            return in->num[i];
        }
    }
    return NAN;
}

static int one_of(const char* s, const char* const* list)
{
    for (int i = 0; list[i]; ++i) {
        if (strcmp(s, list[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static void join(char* out, size_t cap, const char* const* list)
{
    out[0] = '\0';
    for (int i = 0; list[i]; ++i) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s'%s'", i ? ", " : "", list[i]);
    }
}

/* x with the fewest digits that read back as x (as Python's repr: 1e-15, not
 * 1.0000000000000001e-15), into out[32]. */
static const char* shortest(char* out, double x)
{
    if (x == floor(x) && fabs(x) < 1e15) {          /* an integer: 100, not 1e+02 */
        snprintf(out, 32, "%.0f", x);
        return out;
    }
    for (int digits = 1; digits <= 17; ++digits) {
        snprintf(out, 32, "%.*g", digits, x);
        if (!isfinite(x) || strtod(out, NULL) == x) {
            break;
        }
    }
    return out;
}

/* The unit of a numeric solver setting in messages (the contact settings' gaps: m or rad). */
static const char* setting_unit(int id)
{
    switch (id) {
    case SOLVER_STEP: case SOLVER_EVENT_TOL: return " s";
    case SOLVER_CONTACT_TOL: return " (m or rad)";
    case SOLVER_CONTACT_VELOCITY: return " (m/s or rad/s)";
    default: return "";
    }
}

/* A solver setting the FMU may lack (the contact settings: models with contacts only); 0
 * when it has none (MbeSettings: the model data's default). */
static double solver_number_or_0(const Inst* in, int id)
{
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_SOLVER && FMU_VARS[i].index == id) {
            return in->num[i];
        }
    }
    return 0.0;
}

/* The solver settings from the solver.* variables; 0, or -1 with the reason in in->err. */
static int make_settings_quiet(Inst* in, MbeSettings* s)
{
    static const char* const native_methods[] = {"dopri5", "dop853", "rk4", "auto", NULL};
    static const char* const native_forms[] = {"auto", "recursive", NULL};
    static const char* const stabs[] = {"none", "projection", "baumgarte", NULL};
    char list[512], shown[160];
    const char* m = solver_string(in, SOLVER_METHOD);
    const char* f = solver_string(in, SOLVER_FORMULATION);
    const char* st = solver_string(in, SOLVER_STABILIZATION);
    const char* dae = solver_string(in, SOLVER_DAE_FORM);
    int method = one_of(m, native_methods);
    if (method < 0) {
        echo(shown, sizeof shown, m);
        if (one_of(m, FMU_PY_METHODS) >= 0) {
            return snprintf(in->err, sizeof in->err, "solver.method = %s runs only in the Python FMU of "
                       "this model; this native FMU runs 'auto', 'dopri5', 'dop853' and 'rk4' (rebuild "
                       "with fmu-mb build --python MODEL.py for %s)", shown, shown), -1;
        }
        join(list, sizeof list, FMU_PY_METHODS);
        return snprintf(in->err, sizeof in->err, "solver.method = %s is not a method; valid values are "
                   "'auto', 'dopri5', 'dop853', 'rk4' (the Python FMU also has %s)", shown,
                   list), -1;
    }
    if (one_of(f, native_forms) < 0) {
        echo(shown, sizeof shown, f);
        if (one_of(f, FMU_PY_FORMULATIONS) >= 0) {
            return snprintf(in->err, sizeof in->err, "solver.formulation = %s runs only in the Python FMU "
                       "of this model; this native FMU runs 'auto' and 'recursive' (the "
                       "compiled engine); rebuild with fmu-mb build --python MODEL.py for %s",
                       shown, shown), -1;
        }
        join(list, sizeof list, FMU_PY_FORMULATIONS);
        return snprintf(in->err, sizeof in->err, "solver.formulation = %s is not a formulation; valid "
                   "values are 'auto', 'recursive' (the Python FMU also has %s)", shown,
                   list), -1;
    }
    int stab = one_of(st, stabs);
    if (stab < 0) {
        echo(shown, sizeof shown, st);
        return snprintf(in->err, sizeof in->err, "solver.stabilization = %s: expected one of 'projection', "
                   "'baumgarte', 'none'", shown), -1;
    }
    if (one_of(dae, FMU_DAE_FORMS) < 0) {
        echo(shown, sizeof shown, dae);
        join(list, sizeof list, FMU_DAE_FORMS);
        return snprintf(in->err, sizeof in->err, "solver.dae_form = %s: expected one of %s", shown,
                   list), -1;
    }
    static const char* const assembly_checks[] = {"warn", "error", NULL};
    const char* as = solver_string(in, SOLVER_ASSEMBLY);
    if (*as && one_of(as, assembly_checks) < 0) {
        echo(shown, sizeof shown, as);
        return snprintf(in->err, sizeof in->err, "solver.assembly = %s: expected one of 'warn', "
                   "'error'", shown), -1;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        const FmuVar* v = &FMU_VARS[i];
        if (v->kind == VK_SOLVER && v->type != VT_STRING) {
            double x = in->num[i];
            if (!(x >= v->min && x <= v->max)) {
                char a[32], b[32], c[32];
                return snprintf(in->err, sizeof in->err, "solver setting '%s' = %s is outside its "
                           "valid range [%s, %s]%s", v->name, shortest(a, x),
                           shortest(b, v->min), shortest(c, v->max), setting_unit(v->index)),
                       -1;
            }
        }
    }
    memset(s, 0, sizeof *s);
    s->method = method;
    s->rtol = solver_number(in, SOLVER_RTOL);
    s->atol = solver_number(in, SOLVER_ATOL);
    s->step = solver_number(in, SOLVER_STEP);
    s->max_step = FMU_MAX_STEP;
    s->max_steps = solver_number(in, SOLVER_MAX_STEPS);
    s->stabilization = stab;
    s->alpha = FMU_BAUMGARTE_ALPHA;
    s->beta = FMU_BAUMGARTE_BETA;
    s->proj_tol = FMU_PROJECTION_TOL;
    /* checked above against their ranges (> 0, finite): never the 0 of "the model's" */
    s->contact_tol = solver_number_or_0(in, SOLVER_CONTACT_TOL);
    s->contact_velocity = solver_number_or_0(in, SOLVER_CONTACT_VELOCITY);
    s->event_tol = solver_number_or_0(in, SOLVER_EVENT_TOL);
    return 0;
}

/* The engine's parameter vector from the parameter variables. */
static void make_params(Inst* in, double* p)
{
    for (int k = 0; k < FMU_N_PARAMS; ++k) {
        p[k] = FMU_PARAM_DEFAULTS[k];
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_PARAM) {
            p[FMU_VARS[i].index] = in->num[i];
        }
    }
}

static int same_doubles(const double* a, const double* b, int n)
{
    return n == 0 || memcmp(a, b, (size_t)n * sizeof(double)) == 0;
}

/* " (parameters set away from their defaults: a = 1, b = 2)" for a message, or "" */
static const char* changed_parameters(const Inst* in, char* out, size_t cap)
{
    size_t len = 0;
    int count = 0;
    out[0] = '\0';
    for (int i = 0; i < FMU_N_VARS && len + 80 < cap; ++i) {
        const FmuVar* v = &FMU_VARS[i];
        if (v->kind == VK_PARAM && memcmp(&in->num[i], &v->start, sizeof(double)) != 0) {
            char a[32];
            len += (size_t)snprintf(out + len, cap - len, "%s%s = %s",
                                    count++ ? ", " : " (parameters set away from their "
                                                     "defaults: ", v->name,
                                    shortest(a, in->num[i]));
        }
    }
    if (count) {
        snprintf(out + len, cap - len, ")");
    }
    return out;
}

/* Settings, parameters and the initial state into the engine; 0, or -1 after a logged error. */
static int configure(Inst* in, const char* fn)
{
    MbeSettings s;
    if (make_settings_quiet(in, &s) != 0) {
        return say(in, fmi2Error, "%s: %s", fn, in->err), -1;
    }
    if (mbe_set_settings(in->engine, &s, in->err, sizeof in->err) != MBE_OK) {
        return say(in, fmi2Error, "%s: %s", fn, in->err), -1;
    }
    make_params(in, in->params);
    if (!in->have_applied || !same_doubles(in->params, in->applied, FMU_N_PARAMS)) {
        if (mbe_set_parameters(in->engine, in->params, in->err, sizeof in->err) != MBE_OK) {
            return say(in, fmi2Error, "%s: %s: invalid parameter: %s", fn, FMU_MODEL_NAME,
                       in->err), -1;
        }
        memcpy(in->applied, in->params, (size_t)FMU_N_PARAMS * sizeof(double));
        in->have_applied = 1;
    }
    double t0 = in->start_set ? in->start_time : FMU_START_TIME;
    if (mbe_initialize(in->engine, t0, in->err, sizeof in->err) != MBE_OK) {
        char changed[600];
        in->configured = 0;
        return say(in, fmi2Error, "%s: %s: the initial state cannot be found: %s%s", fn,
                   FMU_MODEL_NAME, in->err, changed_parameters(in, changed, sizeof changed)),
               -1;
    }
    if (*mbe_warning(in->engine)) {
        if (strcmp(solver_string(in, SOLVER_ASSEMBLY), "error") == 0) {
            in->configured = 0;
            return say(in, fmi2Error, "%s: %s: %s (solver.assembly = 'error')", fn,
                       FMU_MODEL_NAME, mbe_warning(in->engine)), -1;
        }
        say(in, fmi2Warning, "%s: %s: %s", fn, FMU_MODEL_NAME, mbe_warning(in->engine));
    }
    /* refuse up front what every step would discard: a state outside |q|, |qd| <= 1e12, or
     * outputs that are not finite (a parameter such as a mass of 1e300) */
    mbe_get_state(in->engine, in->scratch);           /* t, q, qd, ... (engine.h) */
    size_t nqq = 2 * (size_t)mbe_n_q(in->engine);
    for (size_t k = 1; k <= nqq && k < in->n_state; ++k) {
        if (!(fabs(in->scratch[k]) <= STATE_BOUND)) {
            in->configured = 0;
            return say(in, fmi2Error, "%s: %s: the initial state's value %zu is %g, outside "
                       "|q|, |qd| <= %g; check the parameters and initial conditions", fn,
                       FMU_MODEL_NAME, k, in->scratch[k], STATE_BOUND), -1;
        }
    }
    if (mbe_outputs(in->engine, in->u, in->y, in->err, sizeof in->err) != MBE_OK) {
        in->configured = 0;
        return say(in, fmi2Error, "%s: %s: the outputs at the initial state cannot be computed: "
                   "%s", fn, FMU_MODEL_NAME, in->err), -1;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_OUTPUT && !isfinite(in->y[FMU_VARS[i].index])) {
            in->configured = 0;
            return say(in, fmi2Error, "%s: %s: output '%s' is %g at the initial state; check "
                       "the parameters (a value too large for the model?)", fn, FMU_MODEL_NAME,
                       FMU_VARS[i].name, in->y[FMU_VARS[i].index]), -1;
        }
    }
    /* one trial step of 1e-6 s from the initial state, then the initial state back: a model
     * the engine cannot step from there (a lock-up, a singular pose) is refused here, not by
     * every doStep (as the Python FMU does) */
    if (mbe_do_step(in->engine, 1e-6, in->u, in->err, sizeof in->err) != MBE_OK) {
        in->configured = 0;
        return say(in, fmi2Error, "%s: %s: the model cannot be stepped from its initial state "
                   "(a trial step of 1e-6 s failed: %s); check the parameters and initial "
                   "conditions", fn, FMU_MODEL_NAME, in->err), -1;
    }
    if (mbe_set_state(in->engine, in->scratch, in->err, sizeof in->err) != MBE_OK) {
        in->configured = 0;
        return say(in, fmi2Error, "%s: %s: the initial state cannot be restored after the "
                   "trial step: %s", fn, FMU_MODEL_NAME, in->err), -1;
    }
    in->configured = 1;
    in->dirty = 0;
    in->y_valid = MBE_GROUP_ALL;
    const char* f = solver_string(in, SOLVER_FORMULATION);
    say(in, fmi2OK, "%s: formulation %s -> recursive (native FMU: the compiled engine), method "
        "%s", FMU_MODEL_NAME, f, solver_string(in, SOLVER_METHOD));
    return 0;
}

/* The outputs of the groups in `need` (MBE_GROUP_*) at the current state, computed once per
 * state and inputs: a master reading positions does not pay for the reactions. */
static int outputs(Inst* in, const char* fn, int need)
{
    int missing = need & ~in->y_valid;
    if (!missing) {
        return 0;
    }
    if (mbe_outputs_groups(in->engine, in->u, missing, in->y, in->err, sizeof in->err)
        != MBE_OK) {
        return say(in, fmi2Error, "%s: the outputs cannot be computed: %s", fn, in->err), -1;
    }
    in->y_valid |= missing;
    return 0;
}

/* ------------------------------------------------------------------ life cycle */
EXPORT const char* fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char* fmi2GetVersion(void) { return "2.0"; }

static void free_instance(Inst* in)
{
    if (in->str) {
        for (int i = 0; i < FMU_N_VARS; ++i) {
            free(in->str[i]);
        }
    }
    for (FmuState* s = in->states; s;) {
        FmuState* next = s->next;
        s->magic = 0;
        free(s->bytes);
        free(s);
        s = next;
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        free(in->categories[i]);
    }
    free(in->categories);
    if (in->engine) {
        mbe_free(in->engine);
    }
    free(in->str);
    free(in->num);
    free(in->params);
    free(in->applied);
    free(in->u);
    free(in->y);
    free(in->group);
    free(in->scratch);
    free(in->name);
    in->magic = 0;
    forget_object(in);
    free(in);
}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String guid,
                                     fmi2String resourceLocation,
                                     const fmi2CallbackFunctions* functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)visible;
    (void)resourceLocation;     /* the model data are in this binary: no resources needed */
    if (functions == NULL) {
        return NULL;            /* nothing to log through */
    }
    fmi2CallbackLogger logger = functions->logger;
    fmi2ComponentEnvironment env = functions->componentEnvironment;
    char text[MSG];
    size_t bad = 0;
    if (instanceName == NULL) {
        emit(logger, env, "", fmi2Error, "logStatusError", "fmi2Instantiate: the instance name "
             "is NULL; expected a UTF-8 string (FMI 2.0: a non-empty name); no instance made");
        return NULL;
    }
    if (!utf8_valid(instanceName, &bad)) {
        snprintf(text, sizeof text, "fmi2Instantiate: the instance name is not valid UTF-8 "
                 "(byte 0x%02x at offset %zu); expected a UTF-8 string; no instance made",
                 (unsigned char)instanceName[bad], bad);
        emit(logger, env, "", fmi2Error, "logStatusError", text);
        return NULL;
    }
    if (instanceName[0] == '\0') {
        emit(logger, env, "", fmi2Error, "logStatusError", "fmi2Instantiate: the instance name "
             "is empty; FMI 2.0 requires a non-empty name; no instance made");
        return NULL;
    }
    if (fmuType != fmi2CoSimulation && !(fmuType == fmi2ModelExchange && FMU_HAS_ME)) {
        snprintf(text, sizeof text, "fmi2Instantiate: fmuType %d: this FMU supports %s; no "
                 "instance made", (int)fmuType, FMU_HAS_ME ? "co-simulation "
                 "(fmi2CoSimulation = 1) and model exchange (fmi2ModelExchange = 0)"
                 : "co-simulation only (fmi2CoSimulation = 1)");
        emit(logger, env, instanceName, fmi2Error, "logStatusError", text);
        return NULL;
    }
    if (guid == NULL || strcmp(guid, FMU_GUID) != 0) {
        char shown[160] = "NULL";
        if (guid != NULL) {
            if (utf8_valid(guid, &bad)) {
                echo(shown, sizeof shown, guid);
            } else {
                snprintf(shown, sizeof shown, "a string that is not valid UTF-8");
            }
        }
        snprintf(text, sizeof text, "fmi2Instantiate: GUID %s does not match this FMU's "
                 "binary (expected '%s': the modelDescription.xml of the same FMU); no "
                 "instance made", shown, FMU_GUID);
        emit(logger, env, instanceName, fmi2Error, "logStatusError", text);
        return NULL;
    }
    Inst* in = calloc(1, sizeof *in);
    if (in == NULL) {
        emit(logger, env, instanceName, fmi2Error, "logStatusError",
             "fmi2Instantiate: out of memory");
        return NULL;
    }
    in->magic = INSTANCE_MAGIC;
    in->me = fmuType == fmi2ModelExchange;
    in->logger = logger;
    in->env = env;
    in->logging = loggingOn != 0;
    in->mode = INSTANTIATED;
    in->name = dupstr(instanceName);
    in->engine = mbe_create(FMU_DATA, FMU_DATA_SIZE, in->err, sizeof in->err);
    int ok = in->name && in->engine;
    if (ok) {
        in->n_chart = in->me && FMU_N_IND > 0
                      ? mbe_me_chart_size(in->engine, FMU_N_IND, FMU_IND) : 0;
        in->n_state = mbe_state_size(in->engine) + in->n_chart;
        int nq = FMU_N_PARAMS > 0 ? FMU_N_PARAMS : 1;
        in->num = calloc((size_t)FMU_N_VARS + 1, sizeof(double));
        in->str = calloc((size_t)FMU_N_VARS + 1, sizeof(char*));
        in->params = calloc((size_t)nq, sizeof(double));
        in->applied = calloc((size_t)nq, sizeof(double));
        in->u = calloc((size_t)FMU_N_INPUTS + 1, sizeof(double));
        in->y = calloc((size_t)FMU_N_OUTPUTS + 1, sizeof(double));
        in->group = calloc((size_t)FMU_N_OUTPUTS + 1, sizeof(int));
        in->scratch = calloc(in->n_state + 1, sizeof(double));
        ok = in->num && in->str && in->params && in->applied && in->u && in->y && in->group
             && in->scratch;
        if (ok && (mbe_n_parameters(in->engine) != FMU_N_PARAMS
                   || mbe_n_inputs(in->engine) != FMU_N_INPUTS
                   || mbe_n_outputs(in->engine) != FMU_N_OUTPUTS)) {
            snprintf(in->err, sizeof in->err, "the model data have %d parameters, %d inputs "
                     "and %d outputs, the variable table %d, %d and %d (a damaged build)",
                     mbe_n_parameters(in->engine), mbe_n_inputs(in->engine),
                     mbe_n_outputs(in->engine), FMU_N_PARAMS, FMU_N_INPUTS, FMU_N_OUTPUTS);
            ok = 0;
        }
    }
    if (ok) {
        for (int k = 0; k < FMU_N_OUTPUTS; ++k) {
            in->group[k] = mbe_output_group(in->engine, k);
            if (!(in->group[k] & MBE_GROUP_ALL)) {
                in->group[k] = MBE_GROUP_ALL;
            }
        }
        reset_values(in);
        for (int i = 0; i < FMU_N_VARS; ++i) {
            if (FMU_VARS[i].type == VT_STRING && in->str[i] == NULL) {
                ok = 0;
            }
        }
    }
    if (!ok) {
        /* (each part bounded: the message fits MSG) */
        snprintf(text, sizeof text, "fmi2Instantiate: %.1000s: %.1000s; no instance made",
                 FMU_MODEL_NAME, in->err[0] ? in->err : "out of memory");
        emit(logger, env, instanceName, fmi2Error, "logStatusError", text);
        free_instance(in);
        return NULL;
    }
    return in;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Inst* in = (Inst*)c;
    if (!live_object(in, INSTANCE_MAGIC)) {
        return;
    }
    free_instance(in);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t n,
                                      const fmi2String categories[])
{
    Inst* in = enter(c, "fmi2SetDebugLogging", ANY);
    if (!in) {
        return fmi2Error;
    }
    if (n > 0 && categories == NULL) {
        return say(in, fmi2Error, "fmi2SetDebugLogging: NULL array for %zu categories; nothing "
                   "was changed", n);
    }
    for (size_t i = 0; i < n; ++i) {
        size_t bad;
        if (categories[i] == NULL || !utf8_valid(categories[i], &bad)) {
            return say(in, fmi2Error, "fmi2SetDebugLogging: category %zu is %s; expected one of "
                       "the LogCategories of modelDescription.xml; nothing was changed", i,
                       categories[i] == NULL ? "NULL" : "not valid UTF-8");
        }
        if (one_of(categories[i], FMU_LOG_CATEGORIES) < 0) {
            char shown[160], list[512];
            echo(shown, sizeof shown, categories[i]);
            join(list, sizeof list, FMU_LOG_CATEGORIES);
            return say(in, fmi2Error, "fmi2SetDebugLogging: unknown category %s; expected one "
                       "of %s; nothing was changed", shown, list);
        }
    }
    char** copy = NULL;
    if (n > 0) {
        copy = calloc(n, sizeof(char*));
        if (copy == NULL) {
            return say(in, fmi2Error, "fmi2SetDebugLogging: out of memory");
        }
        for (size_t i = 0; i < n; ++i) {
            copy[i] = dupstr(categories[i]);
            if (copy[i] == NULL) {
                for (size_t k = 0; k < i; ++k) {
                    free(copy[k]);
                }
                free(copy);
                return say(in, fmi2Error, "fmi2SetDebugLogging: out of memory");
            }
        }
    }
    for (size_t i = 0; i < in->n_categories; ++i) {
        free(in->categories[i]);
    }
    free(in->categories);
    in->categories = copy;
    in->n_categories = n;
    in->logging = loggingOn != 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                      fmi2Real tolerance, fmi2Real startTime,
                                      fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    Inst* in = enter(c, "fmi2SetupExperiment", INSTANTIATED);
    if (!in) {
        return fmi2Error;
    }
    if (!(fabs(startTime) <= TIME_BOUND) || (stopTimeDefined && !(stopTime >= startTime))) {
        return say(in, fmi2Error, "fmi2SetupExperiment: start time %.17g and stop time %.17g%s; "
                   "expected a start time with |t| <= %g s and a stop time >= start time; "
                   "nothing was changed", startTime, stopTime,
                   stopTimeDefined ? "" : " (undefined)", TIME_BOUND);
    }
    if (toleranceDefined && !(tolerance > 0.0 && isfinite(tolerance))) {
        return say(in, fmi2Error, "fmi2SetupExperiment: tolerance %.17g; expected a finite "
                   "number > 0 (or toleranceDefined = false); nothing was changed", tolerance);
    }
    in->start_time = startTime;
    in->start_set = 1;
    in->stop_defined = stopTimeDefined != 0;
    in->stop_time = stopTime;
    in->dirty = 1;
    return fmi2OK;
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    Inst* in = enter(c, "fmi2EnterInitializationMode", INSTANTIATED);
    if (!in) {
        return fmi2Error;
    }
    in->mode = INIT_MODE;
    return fmi2OK;
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    Inst* in = enter(c, "fmi2ExitInitializationMode", INIT_MODE);
    if (!in) {
        return fmi2Error;
    }
    if ((!in->configured || in->dirty) && configure(in, "fmi2ExitInitializationMode") != 0) {
        return fmi2Error;       /* stays in initialization mode: fix the value and retry */
    }
    in->mode = STEP_MODE;
    in->me_mode = ME_EVENT;     /* model exchange: event mode (me2.c) */
    if (in->me) {
        mbe_me_reset(in->engine);   /* the charts: the identity at the initial state */
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c)
{
    Inst* in = enter(c, "fmi2Terminate", STEP_MODE);
    if (!in) {
        return fmi2Error;
    }
    in->mode = TERMINATED;
    return fmi2OK;
}

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    Inst* in = enter(c, "fmi2Reset", ANY);
    if (!in) {
        return fmi2Error;
    }
    reset_values(in);
    in->mode = INSTANTIATED;
    return fmi2OK;
}

/* ------------------------------------------------------------------ get and set */
static fmi2Status check_refs(Inst* in, const char* fn, const fmi2ValueReference vr[], size_t n,
                             const void* values, int type)
{
    if (n > 0 && (vr == NULL || values == NULL)) {
        return say(in, fmi2Error, "%s: NULL %s array for %zu values; nothing was done", fn,
                   vr == NULL ? "value reference" : "value", n);
    }
    for (size_t k = 0; k < n; ++k) {
        if (vr[k] >= (fmi2ValueReference)FMU_N_VARS) {
            return say(in, fmi2Error, "%s: value reference %u does not exist (this FMU has 0 to "
                       "%d); nothing was done", fn, vr[k], FMU_N_VARS - 1);
        }
        const FmuVar* v = &FMU_VARS[vr[k]];
        if (v->type != type) {
            return say(in, fmi2Error, "%s: value reference %u ('%s') is a %s, not a %s; nothing "
                       "was done", fn, vr[k], v->name, type_name(v->type), type_name(type));
        }
    }
    return fmi2OK;
}

/* Values of non-string variables; outputs from the engine (the groups they need, once). */
static fmi2Status get_numbers(Inst* in, const char* fn, const fmi2ValueReference vr[], size_t n,
                              double* out)
{
    int need = 0, lin = 0;
    for (size_t k = 0; k < n; ++k) {
        if (FMU_VARS[vr[k]].kind == VK_OUTPUT) {
            need |= in->group[FMU_VARS[vr[k]].index];
        }
        lin |= FMU_VARS[vr[k]].kind == VK_STATE || FMU_VARS[vr[k]].kind == VK_DERIV;
    }
    if (need || lin) {
        if ((!in->configured || in->dirty) && configure(in, fn) != 0) {
            return fmi2Error;          /* initialization mode: the initial state's outputs */
        }
        if (need && outputs(in, fn, need) != 0) {
            return fmi2Error;
        }
    }
    double xdot[2 * FMU_N_IND + 1];
    double xs[2 * FMU_N_IND + 1];
    if (lin) {
        /* a model-exchange instance: its continuous states (chart coordinates where three of
         * four Euler parameters are states, engine_me.h) and their derivatives */
        mbe_get_state(in->engine, in->scratch);     /* t, q, qd, ... (engine.h) */
        if (in->me) {
            mbe_me_get_states(in->engine, FMU_N_IND, FMU_IND, xs);
        }
        if ((in->me ? mbe_me_derivatives(in->engine, in->u, FMU_N_IND, FMU_IND, xdot,
                                         in->err, sizeof in->err)
                    : mbe_state_derivatives(in->engine, in->u, FMU_N_IND, FMU_IND, xdot,
                                            in->err, sizeof in->err)) != MBE_OK) {
            return say(in, fmi2Error, "%s: the state derivatives cannot be computed: %s", fn,
                       in->err);
        }
    }
    for (size_t k = 0; k < n; ++k) {
        const FmuVar* v = &FMU_VARS[vr[k]];
        if (v->kind == VK_STATE) {
            int nq = mbe_n_q(in->engine), x = v->index;
            out[k] = in->me ? xs[x]
                            : in->scratch[1 + (x < FMU_N_IND ? FMU_IND[x]
                                                             : nq + FMU_IND[x - FMU_N_IND])];
        } else if (v->kind == VK_DERIV) {
            out[k] = xdot[v->index];
        } else {
            out[k] = v->kind == VK_OUTPUT ? in->y[v->index] : in->num[vr[k]];
        }
    }
    return fmi2OK;
}

#define GET_NUMBERS(Name, Type, TYPE, CONV)                                                   \
    EXPORT fmi2Status fmi2Get##Name(fmi2Component c, const fmi2ValueReference vr[], size_t n, \
                                    Type value[])                                             \
    {                                                                                         \
        Inst* in = enter(c, "fmi2Get" #Name, INIT_MODE | STEP_MODE | TERMINATED);             \
        if (!in) {                                                                            \
            return fmi2Error;                                                                 \
        }                                                                                     \
        fmi2Status st = check_refs(in, "fmi2Get" #Name, vr, n, value, TYPE);                  \
        if (st != fmi2OK) {                                                                   \
            return st;                                                                        \
        }                                                                                     \
        double small[64];                                                                     \
        double* x = n <= 64 ? small : malloc(n * sizeof(double));                            \
        if (x == NULL) {                                                                      \
            return say(in, fmi2Error, "fmi2Get" #Name ": out of memory");                    \
        }                                                                                     \
        st = get_numbers(in, "fmi2Get" #Name, vr, n, x);                                     \
        for (size_t k = 0; st == fmi2OK && k < n; ++k) {                                      \
            value[k] = CONV;                                                                  \
        }                                                                                     \
        if (x != small) {                                                                     \
            free(x);                                                                          \
        }                                                                                     \
        return st;                                                                            \
    }

GET_NUMBERS(Real, fmi2Real, VT_REAL, x[k])
GET_NUMBERS(Integer, fmi2Integer, VT_INTEGER, (fmi2Integer)x[k])
GET_NUMBERS(Boolean, fmi2Boolean, VT_BOOLEAN, (x[k] != 0.0))

EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                fmi2String value[])
{
    Inst* in = enter(c, "fmi2GetString", INIT_MODE | STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    fmi2Status st = check_refs(in, "fmi2GetString", vr, n, value, VT_STRING);
    if (st != fmi2OK) {
        return st;
    }
    for (size_t k = 0; k < n; ++k) {
        value[k] = in->str[vr[k]];
    }
    return fmi2OK;
}

/* Why a value cannot be set on variable i now (written to in->err), or NULL. */
static const char* refuse_set(Inst* in, int i, double x, const char* s)
{
    const FmuVar* v = &FMU_VARS[i];
    if (!settable(v->kind)) {
        snprintf(in->err, sizeof in->err, "'%s' is %s: it cannot be set (only parameters "
                 "and inputs can)", v->name, v->kind == VK_OUTPUT ? "an output"
                 : "a calculated variable (a state or a state derivative)");
        return in->err;
    }
    if (v->kind == VK_INPUT) {
        if (!isfinite(x)) {
            snprintf(in->err, sizeof in->err, "input '%s' = %g: expected a finite value", v->name,
                     x);
            return in->err;
        }
        return NULL;
    }
    if (!(in->mode & (INSTANTIATED | INIT_MODE))) {
        snprintf(in->err, sizeof in->err, "'%s' is a fixed parameter: it can be set only before "
                 "fmi2ExitInitializationMode (now: %s)", v->name, mode_name(in->mode));
        return in->err;
    }
    if (v->type == VT_STRING) {
        size_t bad;
        if (s == NULL) {
            snprintf(in->err, sizeof in->err, "'%s': the string is NULL; expected a UTF-8 "
                     "string", v->name);
            return in->err;
        }
        if (!utf8_valid(s, &bad)) {
            snprintf(in->err, sizeof in->err, "'%s': the string is not valid UTF-8 (byte 0x%02x "
                     "at offset %zu); expected a UTF-8 string", v->name, (unsigned char)s[bad],
                     bad);
            return in->err;
        }
    }
    if (v->kind == VK_FIXED) {
        int same = v->type == VT_STRING ? strcmp(s, v->start_string) == 0 : x == v->start;
        if (!same) {
            char shown[160], built[160];
            if (v->type == VT_STRING) {
                echo(shown, sizeof shown, s);
                echo(built, sizeof built, v->start_string);
            } else {
                snprintf(shown, sizeof shown, "%.17g", x);
                snprintf(built, sizeof built, "%.17g", v->start);
            }
            snprintf(in->err, sizeof in->err, "parameter '%s' is fixed in this FMU (%s); it was "
                     "built with %s = %s, received %s; rebuild it with fmu-mb build MODEL.py "
                     "--set %s=VALUE%s", v->name, v->fixed_reason, v->name, built, shown,
                     v->name, v->structural ? "" : " (or build it with --python)");
            return in->err;
        }
    }
    if (v->type == VT_INTEGER && !(x >= -2147483648.0 && x <= 2147483647.0)) {
        snprintf(in->err, sizeof in->err, "'%s' = %g: not an Integer", v->name, x);
        return in->err;
    }
    return NULL;
}

static void store(Inst* in, int i, double x)
{
    const FmuVar* v = &FMU_VARS[i];
    in->num[i] = x;
    if (v->kind == VK_INPUT) {
        in->u[v->index] = x;
        in->y_valid = 0;
    } else {
        in->dirty = 1;
    }
}

#define SET_NUMBERS(Name, Type, TYPE, CONV)                                                   \
    EXPORT fmi2Status fmi2Set##Name(fmi2Component c, const fmi2ValueReference vr[], size_t n, \
                                    const Type value[])                                       \
    {                                                                                         \
        Inst* in = enter(c, "fmi2Set" #Name, INSTANTIATED | INIT_MODE | STEP_MODE);           \
        if (!in) {                                                                            \
            return fmi2Error;                                                                 \
        }                                                                                     \
        fmi2Status st = check_refs(in, "fmi2Set" #Name, vr, n, value, TYPE);                  \
        if (st != fmi2OK) {                                                                   \
            return st;                                                                        \
        }                                                                                     \
        for (size_t k = 0; k < n; ++k) {                                                      \
            const char* why = refuse_set(in, (int)vr[k], (double)(CONV), NULL);               \
            if (why) {                                                                        \
                return say(in, fmi2Error, "fmi2Set" #Name ": %s; nothing was set", why);      \
            }                                                                                 \
        }                                                                                     \
        for (size_t k = 0; k < n; ++k) {                                                      \
            store(in, (int)vr[k], (double)(CONV));                                            \
        }                                                                                     \
        return fmi2OK;                                                                        \
    }

SET_NUMBERS(Real, fmi2Real, VT_REAL, value[k])
SET_NUMBERS(Integer, fmi2Integer, VT_INTEGER, value[k])
SET_NUMBERS(Boolean, fmi2Boolean, VT_BOOLEAN, (value[k] != 0))

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                const fmi2String value[])
{
    Inst* in = enter(c, "fmi2SetString", INSTANTIATED | INIT_MODE | STEP_MODE);
    if (!in) {
        return fmi2Error;
    }
    fmi2Status st = check_refs(in, "fmi2SetString", vr, n, value, VT_STRING);
    if (st != fmi2OK) {
        return st;
    }
    for (size_t k = 0; k < n; ++k) {
        const char* why = refuse_set(in, (int)vr[k], 0.0, value[k]);
        if (why) {
            return say(in, fmi2Error, "fmi2SetString: %s; nothing was set", why);
        }
    }
    char** copies = calloc(n + 1, sizeof(char*));
    if (copies == NULL) {
        return say(in, fmi2Error, "fmi2SetString: out of memory; nothing was set");
    }
    for (size_t k = 0; k < n; ++k) {
        copies[k] = dupstr(value[k]);
        if (copies[k] == NULL) {
            for (size_t j = 0; j < k; ++j) {
                free(copies[j]);
            }
            free(copies);
            return say(in, fmi2Error, "fmi2SetString: out of memory; nothing was set");
        }
    }
    for (size_t k = 0; k < n; ++k) {
        free(in->str[vr[k]]);
        in->str[vr[k]] = copies[k];
        in->dirty = 1;
    }
    free(copies);
    return fmi2OK;
}

/* ------------------------------------------------------------------ stepping */
static fmi2Status do_step(fmi2Component c, fmi2Real t, fmi2Real h, int stop, int* impact);

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior)
{
    (void)noSetPrior;
    return do_step(c, t, h, 0, NULL);
}

/* fmi2DoStep; with `stop` (FMI 3.0's early return, fmi3_native.c) the step ends at the first
 * impact inside it (mbe_do_step_to_event: *impact = 1, the FMU's time the impact's) */
/* The engine names an input by its index in its messages ("the largest is input 0 = 1e+09"):
 * the FMU's variable name instead. */
static void name_input(Inst* in)
{
    static const char key[] = "the largest is input ";
    char* p = strstr(in->err, key);
    if (p == NULL) {
        return;
    }
    const char* q = p + sizeof key - 1;
    int k = (int)strtol(q, NULL, 10);
    while (*q >= '0' && *q <= '9') {
        q++;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_INPUT && FMU_VARS[i].index == k) {
            char rest[MSG];
            snprintf(rest, sizeof rest, "%s", q);
            snprintf(p, sizeof in->err - (size_t)(p - in->err), "the largest is input '%s'%s",
                     FMU_VARS[i].name, rest);
            return;
        }
    }
}

static fmi2Status do_step(fmi2Component c, fmi2Real t, fmi2Real h, int stop, int* impact)
{
    Inst* in = enter(c, "fmi2DoStep", STEP_MODE);
    if (!in) {
        return fmi2Error;
    }
    if (in->me) {
        return say(in, fmi2Error, "fmi2DoStep: this instance was made for model exchange "
                   "(fmi2ModelExchange): the host's solver integrates its continuous states");
    }
    in->stuck = 0;
    double now = mbe_time(in->engine);
    if (!(isfinite(h) && h >= 0.0)) {
        return say(in, fmi2Discard, "%s: doStep with communication step %.17g at t = %.17g; "
                   "expected a finite step >= 0; the step was not taken", FMU_MODEL_NAME, h, t);
    }
    if (!isfinite(t) || fabs(t - now) > 1e-9 * fmax(1.0, fabs(now))) {
        return say(in, fmi2Discard, "%s: doStep at t = %.17g, but the FMU is at t = %.17g; "
                   "expected the last communication point (restore a saved FMU state to go "
                   "back); the step was not taken", FMU_MODEL_NAME, t, now);
    }
    if (h == 0.0) {
        return fmi2OK;
    }
    double target = t + h;
    if (in->stop_defined && target > in->stop_time + 1e-9 * fmax(1.0, fabs(in->stop_time))) {
        /* FMI 2.0 (fmi2SetupExperiment) and 3.0 (fmi3EnterInitializationMode): computing past
         * a defined stop time is an error */
        return say(in, fmi2Error, "%s: doStep from t = %.17g by %.17g would end at %.17g, "
                   "after the stop time %.17g defined at fmi2SetupExperiment; the step was not "
                   "taken (the state is kept)", FMU_MODEL_NAME, t, h, target, in->stop_time);
    }
    if (!(fabs(target) <= TIME_BOUND)) {
        return say(in, fmi2Discard, "%s: doStep from t = %.17g by %.17g would end beyond the "
                   "time bound |t| <= %g s; the step was not taken", FMU_MODEL_NAME, t, h,
                   TIME_BOUND);
    }
    double hh = target - now;
    if (!(hh > 0.0 && isfinite(hh))) {
        return say(in, fmi2Discard, "%s: doStep from t = %.17g by %.17g: the end %.17g is not "
                   "after the FMU's time; the step was not taken", FMU_MODEL_NAME, t, h, target);
    }
    MbeStatus s = stop ? mbe_do_step_to_event(in->engine, hh, in->u, impact, in->err,
                                              sizeof in->err)
                       : mbe_do_step(in->engine, hh, in->u, in->err, sizeof in->err);
    if (s == MBE_OK) {
        in->y_valid = 0;
        return fmi2OK;
    }
    if (s == MBE_DISCARD) {
        /* the model cannot be advanced from this state with these inputs (a lock-up, a
         * runaway state, the work or step budget): the same call would fail again, so
         * fmi2Terminated is true and the status (MODEL_FAILURE_STATUS) stops the master */
        in->stuck = 1;
        name_input(in);
        return say(in, MODEL_FAILURE_STATUS, "%s: the step from t = %.17g to %.17g failed "
                   "(the state from before the call is kept; fmi2Terminated is true): %s",
                   FMU_MODEL_NAME, now, target, in->err);
    }
    return say(in, fmi2Error, "%s: doStep from t = %.17g refused: %s", FMU_MODEL_NAME, now,
               in->err);
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    Inst* in = enter(c, "fmi2CancelStep", STEP_MODE);
    if (!in) {
        return fmi2Error;
    }
    return say(in, fmi2Error, "fmi2CancelStep: not supported (doStep always completes "
               "synchronously, canRunAsynchronuously = false)");
}

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status* value)
{
    (void)value;
    Inst* in = enter(c, "fmi2GetStatus", STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    return say(in, fmi2Discard, "fmi2GetStatus(%d): not available (doStep never returns "
               "fmi2Pending)", (int)s);
}

EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value)
{
    Inst* in = enter(c, "fmi2GetRealStatus", STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    if (value == NULL) {
        return say(in, fmi2Error, "fmi2GetRealStatus: NULL value pointer");
    }
    if (s != fmi2LastSuccessfulTime) {
        return say(in, fmi2Discard, "fmi2GetRealStatus(%d): only fmi2LastSuccessfulTime (2) is "
                   "available", (int)s);
    }
    *value = mbe_time(in->engine);   /* a discarded step keeps the state: its start */
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer* v)
{
    (void)v;
    Inst* in = enter(c, "fmi2GetIntegerStatus", STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    return say(in, fmi2Discard, "fmi2GetIntegerStatus(%d): not available", (int)s);
}

EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s,
                                       fmi2Boolean* value)
{
    Inst* in = enter(c, "fmi2GetBooleanStatus", STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    if (value == NULL) {
        return say(in, fmi2Error, "fmi2GetBooleanStatus: NULL value pointer");
    }
    if (s != fmi2Terminated) {
        return say(in, fmi2Discard, "fmi2GetBooleanStatus(%d): only fmi2Terminated (3) is "
                   "available", (int)s);
    }
    /* true after fmi2Terminate and while the last doStep was discarded in the model (a
     * lock-up, a runaway state, the work or step budget: the same call would fail again);
     * false after a discard for a wrong step size or communication point, which the master
     * can correct. doStep may still be called (a master may shorten the step). */
    *value = in->stuck || in->mode == TERMINATED;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String* v)
{
    (void)v;
    Inst* in = enter(c, "fmi2GetStringStatus", STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    return say(in, fmi2Discard, "fmi2GetStringStatus(%d): not available", (int)s);
}

static fmi2Status unsupported(fmi2Component c, const char* fn)
{
    Inst* in = enter(c, fn, ANY);
    if (!in) {
        return fmi2Error;
    }
    return say(in, fmi2Error, "%s: not supported by this FMU "
               "(canInterpolateInputs = false, maxOutputDerivativeOrder = 0)", fn);
}

/* The directional derivative d unknowns / d knowns . seed at the current state and
 * inputs: unknowns are outputs and state derivatives, knowns the states (FMU_STATE_VR) and the
 * inputs; the engine differentiates its own equations (mbe_directional_derivative). Nothing
 * changes: the state, inputs and outputs are those from before the call. */
static fmi2Status directional_derivative(Inst* in, const char* fn, const fmi2ValueReference unk[],
                                         size_t nu, const fmi2ValueReference kn[], size_t nk,
                                         const fmi2Real seed[], fmi2Real out[])
{
    if ((nu > 0 && (unk == NULL || out == NULL)) || (nk > 0 && (kn == NULL || seed == NULL))) {
        return say(in, fmi2Error, "%s: NULL array for %zu unknowns or %zu knowns; nothing was "
                   "done", fn, nu, nk);
    }
    if (FMU_N_IND == 0 && FMU_N_INPUTS == 0) {
        return say(in, fmi2Error, "%s: not supported by this FMU (providesDirectionalDerivative "
                   "= false: the engine does not linearize this model)", fn);
    }
    int nx = 2 * FMU_N_IND;
    int* ku = malloc((nu + 1) * sizeof(int));
    int* kk = malloc((nk + 1) * sizeof(int));
    double* dv = malloc((nu + 1) * sizeof(double));
    fmi2Status st = fmi2OK;
    if (!ku || !kk || !dv) {
        st = say(in, fmi2Error, "%s: out of memory", fn);
        goto done;
    }
    for (size_t k = 0; k < nk && st == fmi2OK; ++k) {
        int x = -1;
        for (int j = 0; j < nx; ++j) {
            if ((fmi2ValueReference)FMU_STATE_VR[j] == kn[k]) {
                x = j;
            }
        }
        if (kn[k] >= (fmi2ValueReference)FMU_N_VARS) {
            st = say(in, fmi2Error, "%s: known value reference %u does not exist (this FMU has 0 "
                     "to %d); nothing was done", fn, kn[k], FMU_N_VARS - 1);
        } else if (x >= 0) {
            kk[k] = x;
        } else if (FMU_VARS[kn[k]].kind == VK_INPUT) {
            kk[k] = nx + FMU_VARS[kn[k]].index;
        } else {
            st = say(in, fmi2Error, "%s: known value reference %u ('%s') is neither a state nor "
                     "an input (the knowns of a directional derivative are the states declared "
                     "in ModelStructure/Derivatives and the inputs); nothing was done", fn, kn[k],
                     FMU_VARS[kn[k]].name);
        }
        if (st == fmi2OK && !isfinite(seed[k])) {
            st = say(in, fmi2Error, "%s: the seed of known '%s' is %g; expected a finite "
                     "value; nothing was done", fn, FMU_VARS[kn[k]].name, seed[k]);
        }
    }
    for (size_t k = 0; k < nu && st == fmi2OK; ++k) {
        const FmuVar* v = unk[k] < (fmi2ValueReference)FMU_N_VARS ? &FMU_VARS[unk[k]] : NULL;
        if (v == NULL) {
            st = say(in, fmi2Error, "%s: unknown value reference %u does not exist (this FMU "
                     "has 0 to %d); nothing was done", fn, unk[k], FMU_N_VARS - 1);
        } else if (v->kind == VK_DERIV) {
            ku[k] = v->index;
        } else if (v->kind == VK_OUTPUT && v->type == VT_REAL) {
            ku[k] = nx + v->index;
        } else if (v->kind == VK_STATE) {
            ku[k] = -1 - v->index;            /* a state: d x_j = seed of x_j */
        } else {
            st = say(in, fmi2Error, "%s: unknown value reference %u ('%s') is neither a Real "
                     "output nor a state derivative; nothing was done", fn, unk[k], v->name);
        }
    }
    if (st != fmi2OK) {
        goto done;
    }
    if ((!in->configured || in->dirty) && configure(in, fn) != 0) {
        st = fmi2Error;
        goto done;
    }
    /* the engine's call takes the unknowns it computes; the states' own are filled here */
    size_t ne = 0;
    for (size_t k = 0; k < nu; ++k) {
        if (ku[k] >= 0) {
            ku[ne++] = ku[k];
        }
    }
    if ((in->me && in->mode != INIT_MODE
         ? mbe_me_directional_derivative(in->engine, in->u, FMU_N_IND, FMU_IND, (int)nk, kk,
                                         seed, (int)ne, ku, dv, in->err, sizeof in->err)
         : mbe_directional_derivative(in->engine, in->u, FMU_N_IND, FMU_IND, (int)nk, kk,
                                      seed, (int)ne, ku, dv, in->err, sizeof in->err))
        != MBE_OK) {
        st = say(in, fmi2Error, "%s: %s", fn, in->err);
        goto done;
    }
    for (size_t k = 0, j = 0; k < nu; ++k) {
        const FmuVar* v = &FMU_VARS[unk[k]];
        if (v->kind == VK_STATE) {
            double s = 0.0;
            for (size_t i = 0; i < nk; ++i) {
                s += kk[i] == v->index ? seed[i] : 0.0;
            }
            out[k] = s;
        } else {
            out[k] = dv[j++];
        }
    }
done:
    free(ku);
    free(kk);
    free(dv);
    return st;
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference a[],
                                               size_t na, const fmi2ValueReference b[],
                                               size_t nb, const fmi2Real d[], fmi2Real r[])
{
    Inst* in = enter(c, "fmi2GetDirectionalDerivative", INIT_MODE | STEP_MODE | TERMINATED);
    if (!in) {
        return fmi2Error;
    }
    return directional_derivative(in, "fmi2GetDirectionalDerivative", a, na, b, nb, d, r);
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                              size_t n, const fmi2Integer order[],
                                              const fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return unsupported(c, "fmi2SetRealInputDerivatives");
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[],
                                               size_t n, const fmi2Integer order[],
                                               fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return unsupported(c, "fmi2GetRealOutputDerivatives");
}

/* ------------------------------------------------------------------ FMU states
 * Serialized layout (little-endian as the host writes it; a state moves between instances of
 * the same binary):
 *   "FMMBSTAT" | u32 format version | u32 GUID length | GUID bytes | u32 number of variables |
 *   u32 flags (1: the engine state is present) | f64 start time | u32 start time set |
 *   per variable: outputs nothing, strings u32 length + bytes, others f64 |
 *   u64 engine state length n | n f64 | u64 FNV-1a 64 checksum of everything before it.
 */
typedef struct {
    unsigned char* p;
    size_t n, cap;
    int failed;
} Buf;

static void put(Buf* b, const void* data, size_t n)
{
    if (b->failed) {
        return;
    }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            cap *= 2;
        }
        unsigned char* p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u32(Buf* b, uint32_t x) { put(b, &x, sizeof x); }
static void put_u64(Buf* b, uint64_t x) { put(b, &x, sizeof x); }
static void put_f64(Buf* b, double x) { put(b, &x, sizeof x); }

static uint64_t fnv1a(const unsigned char* p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}


/* The solver values of an FMU state (n_state): the engine's state, then the model-exchange
 * charts of the Euler parameters (engine_me.h) */
static void get_solver_state(Inst* in, double* s)
{
    mbe_get_state(in->engine, s);
    if (in->n_chart > 0) {
        mbe_me_get_chart(in->engine, FMU_N_IND, FMU_IND, s + in->n_state - in->n_chart);
    }
}

static MbeStatus set_solver_state(Inst* in, const double* s)
{
    if (mbe_set_state(in->engine, s, in->err, sizeof in->err) != MBE_OK) {
        return MBE_ERROR;
    }
    return in->n_chart > 0 ? mbe_me_set_chart(in->engine, FMU_N_IND, FMU_IND,
                                              s + in->n_state - in->n_chart, in->err,
                                              sizeof in->err)
                           : MBE_OK;
}

static int serialize(Inst* in, Buf* b)
{
    size_t glen = strlen(FMU_GUID);
    put(b, SER_MAGIC, 8);
    put_u32(b, SER_VERSION);
    put_u32(b, (uint32_t)glen);
    put(b, FMU_GUID, glen);
    put_u32(b, (uint32_t)FMU_N_VARS);
    int engine = in->configured && !in->dirty && (in->mode & (STEP_MODE | TERMINATED));
    put_u32(b, engine ? 1u : 0u);
    put_f64(b, in->start_time);
    put_u32(b, (uint32_t)in->start_set);
    for (int i = 0; i < FMU_N_VARS; ++i) {
        const FmuVar* v = &FMU_VARS[i];
        if (v->kind >= VK_OUTPUT) {     /* outputs, states, derivatives: calculated */
            continue;
        }
        if (v->type == VT_STRING) {
            size_t n = strlen(in->str[i]);
            put_u32(b, (uint32_t)n);
            put(b, in->str[i], n);
        } else {
            put_f64(b, in->num[i]);
        }
    }
    if (engine) {
        put_u64(b, (uint64_t)in->n_state);
        get_solver_state(in, in->scratch);
        put(b, in->scratch, in->n_state * sizeof(double));
    } else {
        put_u64(b, 0);
    }
    if (!b->failed) {
        put_u64(b, fnv1a(b->p, b->n));
    }
    return b->failed ? -1 : 0;
}

typedef struct {
    const unsigned char* p;
    size_t n, at;
    int failed;
} Reader;

static int get(Reader* r, void* out, size_t n)
{
    if (r->failed || n > r->n - r->at) {
        r->failed = 1;
        memset(out, 0, n);
        return -1;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
    return 0;
}

static uint32_t get_u32(Reader* r) { uint32_t x; get(r, &x, sizeof x); return x; }
static uint64_t get_u64(Reader* r) { uint64_t x; get(r, &x, sizeof x); return x; }
static double get_f64(Reader* r) { double x; get(r, &x, sizeof x); return x; }

/* The decoded values of a state (owned copies), before they are applied. */
typedef struct {
    double* num;
    char** str;
    double start_time;
    int start_set;
    int engine;
    double* state;
} Decoded;

static void free_decoded(Decoded* d)
{
    if (d->str) {
        for (int i = 0; i < FMU_N_VARS; ++i) {
            free(d->str[i]);
        }
    }
    free(d->str);
    free(d->num);
    free(d->state);
}

/* Check the bytes and every value in them; 0, or -1 with the reason in in->err. */
static int decode(Inst* in, const unsigned char* p, size_t n, Decoded* d)
{
    Reader r = {p, n, 0, 0};
    char magic[8];
    memset(d, 0, sizeof *d);
#define BAD(...) do { snprintf(in->err, sizeof in->err, __VA_ARGS__); return -1; } while (0)
    if (n < 8 + 4 + 4 + 8) {
        BAD("the %zu bytes are too short to be a state of this FMU", n);
    }
    get(&r, magic, 8);
    if (memcmp(magic, SER_MAGIC, 8) != 0) {
        BAD("the bytes are not a state of an fmu_mb native FMU (no %s tag)", SER_MAGIC);
    }
    uint32_t version = get_u32(&r);
    if (version != SER_VERSION) {
        BAD("the state has format version %u; this FMU reads version %u", version, SER_VERSION);
    }
    uint64_t sum;
    memcpy(&sum, p + n - 8, 8);
    if (fnv1a(p, n - 8) != sum) {
        BAD("the state's checksum does not match its %zu bytes (damaged or truncated)", n);
    }
    r.n = n - 8;     /* the checksum is not content */
    uint32_t glen = get_u32(&r);
    size_t want = strlen(FMU_GUID);
    if (glen != want || r.failed || glen > r.n - r.at || memcmp(p + r.at, FMU_GUID, want) != 0) {
        BAD("the state belongs to another FMU (its GUID is not '%s')", FMU_GUID);
    }
    r.at += glen;
    uint32_t nvars = get_u32(&r);
    if (nvars != (uint32_t)FMU_N_VARS) {
        BAD("the state has %u variables; this FMU has %d", nvars, FMU_N_VARS);
    }
    uint32_t flags = get_u32(&r);
    if (flags > 1u) {
        BAD("the state's flags are %u; expected 0 or 1", flags);
    }
    d->engine = (int)flags;
    d->start_time = get_f64(&r);
    uint32_t start_set = get_u32(&r);
    if (start_set > 1u || !isfinite(d->start_time)) {
        BAD("the state's start time %.17g is not finite or not marked", d->start_time);
    }
    d->start_set = (int)start_set;
    d->num = calloc((size_t)FMU_N_VARS + 1, sizeof(double));
    d->str = calloc((size_t)FMU_N_VARS + 1, sizeof(char*));
    if (!d->num || !d->str) {
        BAD("out of memory");
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        const FmuVar* v = &FMU_VARS[i];
        if (v->kind >= VK_OUTPUT) {     /* outputs, states, derivatives: calculated */
            continue;
        }
        if (v->type == VT_STRING) {
            uint32_t len = get_u32(&r);
            if (r.failed || len > r.n - r.at) {
                BAD("the state is truncated (string '%s')", v->name);
            }
            d->str[i] = malloc((size_t)len + 1);
            if (!d->str[i]) {
                BAD("out of memory");
            }
            get(&r, d->str[i], len);
            d->str[i][len] = '\0';
            size_t bad;
            if (strlen(d->str[i]) != len || !utf8_valid(d->str[i], &bad)) {
                BAD("the state's value of '%s' is not a valid UTF-8 string", v->name);
            }
            if (v->kind == VK_FIXED && strcmp(d->str[i], v->start_string) != 0) {
                BAD("the state's value of the fixed parameter '%s' is not the one this FMU was "
                    "built with", v->name);
            }
            continue;
        }
        double x = get_f64(&r);
        d->num[i] = x;
        if (r.failed) {
            BAD("the state is truncated (variable '%s')", v->name);
        }
        if (v->kind == VK_INPUT && !isfinite(x)) {
            BAD("the state's input '%s' = %g is not finite", v->name, x);
        }
        if (v->kind == VK_FIXED && x != v->start) {
            BAD("the state's value %.17g of the fixed parameter '%s' is not the one this FMU "
                "was built with (%.17g)", x, v->name, v->start);
        }
        if (v->type == VT_INTEGER && !(x == floor(x) && fabs(x) <= 2147483647.0)) {
            BAD("the state's value %.17g of the Integer '%s' is not an integer", x, v->name);
        }
        if (v->type == VT_BOOLEAN && !(x == 0.0 || x == 1.0)) {
            BAD("the state's value %.17g of the Boolean '%s' is not 0 or 1", x, v->name);
        }
        if (d->engine && (v->kind == VK_PARAM || v->kind == VK_SOLVER)
            && !(x >= v->min && x <= v->max)) {
            BAD("the state's value %.17g of '%s' is outside its valid range [%.17g, %.17g]", x,
                v->name, v->min, v->max);
        }
    }
    uint64_t ns = get_u64(&r);
    if (r.failed) {
        BAD("the state is truncated");
    }
    if (d->engine) {
        if (ns != (uint64_t)in->n_state) {
            BAD("the state holds %llu solver values; this FMU has %zu", (unsigned long long)ns,
                in->n_state);
        }
        d->state = calloc(in->n_state + 1, sizeof(double));
        if (!d->state) {
            BAD("out of memory");
        }
        get(&r, d->state, in->n_state * sizeof(double));
        for (size_t k = 0; k < in->n_state; ++k) {
            if (!isfinite(d->state[k])) {
                BAD("the state's solver value %zu is %g; expected a finite number", k,
                    d->state[k]);
            }
        }
        double t0 = d->start_set ? d->start_time : FMU_START_TIME;
        if (in->n_state > 0 && !(d->state[0] >= t0 && d->state[0] <= TIME_BOUND)) {
            BAD("the state's time %.17g is not in [%.17g, %g] (its start time to the time "
                "bound)", d->state[0], t0, TIME_BOUND);
        }
    } else if (ns != 0) {
        BAD("the state holds solver values but is marked as taken before initialisation");
    }
    if (r.failed || r.at != r.n) {
        BAD("the state has %zu bytes; its content needs %zu", n, r.at + 8);
    }
#undef BAD
    return 0;
}

static FmuState* own_state(Inst* in, fmi2FMUstate s)
{
    for (FmuState* it = in->states; it; it = it->next) {
        if ((void*)it == s) {
            return it;
        }
    }
    return NULL;
}

static FmuState* new_state(Inst* in, unsigned char* bytes, size_t size)
{
    FmuState* s = malloc(sizeof *s);
    if (!s) {
        return NULL;
    }
    s->magic = STATE_MAGIC;
    s->bytes = bytes;
    s->size = size;
    s->next = in->states;
    in->states = s;
    return s;
}

static void drop_state(Inst* in, FmuState* s)
{
    for (FmuState** p = &in->states; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            s->magic = 0;
            free(s->bytes);
            free(s);
            return;
        }
    }
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    Inst* in = enter(c, "fmi2GetFMUstate", ANY);
    if (!in) {
        return fmi2Error;
    }
    if (state == NULL) {
        return say(in, fmi2Error, "fmi2GetFMUstate: NULL pointer for the state");
    }
    FmuState* old = NULL;
    if (*state != NULL && (old = own_state(in, *state)) == NULL) {
        return say(in, fmi2Error, "fmi2GetFMUstate: *FMUstate is neither NULL nor a state of "
                   "this instance; nothing was done");
    }
    Buf b = {0};
    if (serialize(in, &b) != 0) {
        free(b.p);
        return say(in, fmi2Error, "fmi2GetFMUstate: out of memory");
    }
    if (old) {                         /* updated in place */
        free(old->bytes);
        old->bytes = b.p;
        old->size = b.n;
        return fmi2OK;
    }
    FmuState* s = new_state(in, b.p, b.n);
    if (!s) {
        free(b.p);
        return say(in, fmi2Error, "fmi2GetFMUstate: out of memory");
    }
    *state = s;
    return fmi2OK;
}

/* Restore a serialized state; 0, or -1 with the reason in in->err (nothing changed). */
static int restore_quiet(Inst* in, const unsigned char* p, size_t n)
{
    Decoded d;
    if (decode(in, p, n, &d) != 0) {
        free_decoded(&d);
        return -1;
    }
    int initialized = in->mode & (STEP_MODE | TERMINATED);
    if (initialized && !d.engine) {
        free_decoded(&d);
        snprintf(in->err, sizeof in->err, "the state was taken before initialisation ended; "
                 "this instance is initialised (fmi2Reset it first)");
        return -1;
    }
    /* Keep what is replaced, to undo a restore that the engine refuses. */
    double* old_num = in->num;
    char** old_str = in->str;
    double old_start = in->start_time;
    int old_start_set = in->start_set, old_configured = in->configured, old_dirty = in->dirty;
    in->num = d.num;
    in->str = d.str;
    in->start_time = d.start_time;
    in->start_set = d.start_set;
    d.num = NULL;
    d.str = NULL;
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].type == VT_STRING && in->str[i] == NULL) {
            in->str[i] = dupstr(FMU_VARS[i].start_string);   /* outputs never are strings */
        }
    }
    int failed = 0;
    if (initialized) {
        MbeSettings s;
        int have_old_params = in->have_applied;
        double* keep = malloc(((size_t)FMU_N_PARAMS + 1) * sizeof(double));
        size_t ns = in->n_state;
        double* keep_state = malloc((ns + 1) * sizeof(double));
        if (!keep || !keep_state) {
            failed = 1;
            snprintf(in->err, sizeof in->err, "out of memory");
        } else {
            memcpy(keep, in->applied, (size_t)FMU_N_PARAMS * sizeof(double));
            get_solver_state(in, keep_state);
            MbeSettings old_s;
            int old_settings_ok;
            {   /* the settings of the values being replaced */
                double* t = in->num; char** ts = in->str;
                in->num = old_num; in->str = old_str;
                old_settings_ok = make_settings_quiet(in, &old_s);
                in->num = t; in->str = ts;
            }
            if (make_settings_quiet(in, &s) != 0) {
                failed = 1;
            } else if (mbe_set_settings(in->engine, &s, in->err, sizeof in->err) != MBE_OK) {
                failed = 1;
            } else {
                make_params(in, in->params);
                if (!same_doubles(in->params, in->applied, FMU_N_PARAMS)) {
                    if (mbe_set_parameters(in->engine, in->params, in->err, sizeof in->err)
                        != MBE_OK) {
                        failed = 1;
                    } else {
                        memcpy(in->applied, in->params, (size_t)FMU_N_PARAMS * sizeof(double));
                        in->have_applied = 1;
                    }
                }
                if (!failed && set_solver_state(in, d.state) != MBE_OK) {
                    failed = 1;
                }
            }
            if (failed) {   /* undo: the settings, parameters and state from before */
                char why[MSG];
                memcpy(why, in->err, sizeof why);
                if (old_settings_ok == 0) {
                    mbe_set_settings(in->engine, &old_s, in->err, sizeof in->err);
                }
                if (have_old_params && !same_doubles(keep, in->applied, FMU_N_PARAMS)) {
                    mbe_set_parameters(in->engine, keep, in->err, sizeof in->err);
                    memcpy(in->applied, keep, (size_t)FMU_N_PARAMS * sizeof(double));
                }
                set_solver_state(in, keep_state);
                memcpy(in->err, why, sizeof why);
            }
        }
        free(keep);
        free(keep_state);
    }
    if (failed) {
        for (int i = 0; i < FMU_N_VARS; ++i) {
            free(in->str[i]);
        }
        free(in->str);
        free(in->num);
        in->num = old_num;
        in->str = old_str;
        in->start_time = old_start;
        in->start_set = old_start_set;
        in->configured = old_configured;
        in->dirty = old_dirty;
        free_decoded(&d);
        return -1;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        free(old_str[i]);
    }
    free(old_str);
    free(old_num);
    for (int k = 0; k < FMU_N_INPUTS; ++k) {
        in->u[k] = 0.0;
    }
    for (int i = 0; i < FMU_N_VARS; ++i) {
        if (FMU_VARS[i].kind == VK_INPUT) {
            in->u[FMU_VARS[i].index] = in->num[i];
        }
    }
    if (initialized) {
        in->configured = 1;
        in->dirty = 0;
    } else {
        in->configured = 0;
        in->dirty = 1;
    }
    in->y_valid = 0;
    free_decoded(&d);
    return 0;
}

static fmi2Status restore(Inst* in, const char* fn, const unsigned char* p, size_t n)
{
    if (restore_quiet(in, p, n) != 0) {
        return say(in, fmi2Error, "%s: the state cannot be restored: %s; the instance was not "
                   "changed", fn, in->err);
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    Inst* in = enter(c, "fmi2SetFMUstate", ANY);
    if (!in) {
        return fmi2Error;
    }
    FmuState* s = state ? own_state(in, state) : NULL;
    if (s == NULL) {
        return say(in, fmi2Error, "fmi2SetFMUstate: %s; the instance was not changed",
                   state == NULL ? "NULL state"
                                 : "not a state made by this instance (or already freed)");
    }
    fmi2Status st = restore(in, "fmi2SetFMUstate", s->bytes, s->size);
    if (st == fmi2OK) {
        in->stuck = 0;
    }
    return st;
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* state)
{
    Inst* in = enter(c, "fmi2FreeFMUstate", ANY);
    if (!in) {
        return fmi2Error;
    }
    if (state == NULL || *state == NULL) {
        return fmi2OK;
    }
    FmuState* s = own_state(in, *state);
    if (s == NULL) {
        return say(in, fmi2Error, "fmi2FreeFMUstate: not a state made by this instance (or "
                   "already freed); nothing was freed");
    }
    drop_state(in, s);
    *state = NULL;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t* size)
{
    Inst* in = enter(c, "fmi2SerializedFMUstateSize", ANY);
    if (!in) {
        return fmi2Error;
    }
    FmuState* s = state ? own_state(in, state) : NULL;
    if (size == NULL || s == NULL) {
        return say(in, fmi2Error, "fmi2SerializedFMUstateSize: %s",
                   size == NULL ? "NULL size pointer" : "not a state made by this instance");
    }
    *size = s->size;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte bytes[],
                                        size_t size)
{
    Inst* in = enter(c, "fmi2SerializeFMUstate", ANY);
    if (!in) {
        return fmi2Error;
    }
    FmuState* s = state ? own_state(in, state) : NULL;
    if (s == NULL) {
        return say(in, fmi2Error, "fmi2SerializeFMUstate: not a state made by this instance");
    }
    if (bytes == NULL || size != s->size) {
        return say(in, fmi2Error, "fmi2SerializeFMUstate: the buffer holds %zu bytes, the state "
                   "needs %zu (fmi2SerializedFMUstateSize); nothing was written",
                   bytes == NULL ? (size_t)0 : size, s->size);
    }
    memcpy(bytes, s->bytes, size);
    return fmi2OK;
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size,
                                          fmi2FMUstate* state)
{
    Inst* in = enter(c, "fmi2DeSerializeFMUstate", ANY);
    if (!in) {
        return fmi2Error;
    }
    if (state == NULL || (bytes == NULL && size > 0)) {
        return say(in, fmi2Error, "fmi2DeSerializeFMUstate: NULL %s",
                   state == NULL ? "state pointer" : "byte array");
    }
    FmuState* old = NULL;
    if (*state != NULL && (old = own_state(in, *state)) == NULL) {
        return say(in, fmi2Error, "fmi2DeSerializeFMUstate: *FMUstate is neither NULL nor a "
                   "state of this instance; nothing was done");
    }
    Decoded d;
    int rc = decode(in, (const unsigned char*)bytes, size, &d);
    int engine = d.engine;
    free_decoded(&d);
    if (rc != 0) {
        return say(in, fmi2Error, "fmi2DeSerializeFMUstate: %s; nothing was changed", in->err);
    }
    if (engine && (in->mode & (STEP_MODE | TERMINATED))) {
        /* The engine checks its values (finite, in range, consistent with the model): try the
         * state on this instance and put the current one back, so that a state this instance
         * could not take is refused here and not only at fmi2SetFMUstate. */
        Buf now = {0};
        if (serialize(in, &now) != 0) {
            free(now.p);
            return say(in, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
        }
        rc = restore_quiet(in, (const unsigned char*)bytes, size);
        if (rc == 0) {
            restore_quiet(in, now.p, now.n);      /* its own state: always accepted */
        }
        free(now.p);
        if (rc != 0) {
            return say(in, fmi2Error, "fmi2DeSerializeFMUstate: the state cannot be used by "
                       "this FMU: %s; nothing was changed", in->err);
        }
    }
    unsigned char* copy = malloc(size);
    if (!copy) {
        return say(in, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
    }
    memcpy(copy, bytes, size);
    if (old) {
        free(old->bytes);
        old->bytes = copy;
        old->size = size;
        return fmi2OK;
    }
    FmuState* s = new_state(in, copy, size);
    if (!s) {
        free(copy);
        return say(in, fmi2Error, "fmi2DeSerializeFMUstate: out of memory");
    }
    *state = s;
    return fmi2OK;
}

/* ------------------------------------------------------------------ model exchange */
#include "me2.c"
