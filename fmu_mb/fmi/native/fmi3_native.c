/*
 * fmu_mb native FMU: the FMI 3.0 co-simulation interface over the compiled engine
 * (fmu_mb/engine/native/engine.h), built by `fmu-mb build --native --fmi 3`
 * (fmu_mb.fmi.native_platforms.build_native_fmu3).
 *
 * One implementation for both FMI versions: this file includes fmi2_native.c with EXPORT
 * defined as `static`, so the instance, the variable table (fmu_model.h), the values, the
 * solver settings, the parameter checks, the state machine, the step and the serialized FMU
 * states are those of the FMI 2.0 FMU, and both FMUs compute the same numbers. What FMI 3.0
 * adds or names differently is here:
 *   - the types (Float64 = Real, Int32 = Integer, Boolean is a 1-byte bool, String), the
 *     nValues argument (every variable is a scalar: nValues must equal nValueReferences), the
 *     other types (Float32, Int8 ... UInt64, Binary, Clock) of which this FMU has no variable;
 *   - the independent variable `time` (value reference FMU_N_VARS: the FMU's time; read only);
 *   - fmi3InstantiateCoSimulation (the FMI 2.0 logger becomes the FMI 3.0 logMessage callback;
 *     messages name the FMI 3.0 functions), fmi3EnterInitializationMode with the experiment;
 *   - Event Mode (eventModeUsed = true): after fmi3ExitInitializationMode and fmi3EnterEventMode
 *     the FMU is in Event Mode until fmi3EnterStepMode; fmi3UpdateDiscreteStates reports no
 *     discrete state to update (the impact itself is applied by the engine's step);
 *   - fmi3DoStep's out arguments: eventHandlingNeeded, terminateSimulation, earlyReturn,
 *     lastSuccessfulTime. A model with contacts has mightReturnEarlyFromDoStep = true: with
 *     earlyReturnAllowed a step ends at the first impact inside it (earlyReturn, and
 *     lastSuccessfulTime = the impact time, the state just after the impact), and with
 *     eventModeUsed eventHandlingNeeded asks the master for Event Mode there; see
 *     step_engine();
 *   - model exchange (me3.c over me2.c) when the model has continuous states;
 *   - the scheduled-execution, clock, configuration-mode and derivative functions are
 *     exported (importers look them all up) and refuse with fmi3Error and a message;
 *     fmi3InstantiateScheduledExecution returns NULL.
 * Every promise of fmi2_native.c holds: no global mutable state, nothing but fmi3* exported,
 * a refused call changes nothing and is logged even with logging off, fmi3Fatal is never
 * returned.
 */
#include <stdbool.h>
#include <stdint.h>

#include "unused.h"
#define EXPORT static MB_MAYBE_UNUSED   /* (the FMI 2.0 functions this front does not wrap) */
#define MODEL_FAILURE_STATUS fmi2Discard   /* with terminateSimulation = true */
#include "fmi2_native.c"
#undef EXPORT

#if defined(_WIN32)
#define FMI3_EXPORT __declspec(dllexport)
#else
#define FMI3_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------ FMI 3.0 types */
typedef void* fmi3Instance;
typedef void* fmi3InstanceEnvironment;
typedef void* fmi3FMUState;
typedef unsigned int fmi3ValueReference;
typedef float fmi3Float32;
typedef double fmi3Float64;
typedef int8_t fmi3Int8;
typedef uint8_t fmi3UInt8;
typedef int16_t fmi3Int16;
typedef uint16_t fmi3UInt16;
typedef int32_t fmi3Int32;
typedef uint32_t fmi3UInt32;
typedef int64_t fmi3Int64;
typedef uint64_t fmi3UInt64;
typedef bool fmi3Boolean;
typedef char fmi3Char;
typedef const fmi3Char* fmi3String;
typedef uint8_t fmi3Byte;
typedef const fmi3Byte* fmi3Binary;
typedef bool fmi3Clock;
typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;
typedef enum { fmi3Independent, fmi3Constant, fmi3Fixed, fmi3Tunable, fmi3Discrete,
               fmi3Dependent } fmi3DependencyKind;
typedef enum { fmi3IntervalNotYetKnown, fmi3IntervalUnchanged,
               fmi3IntervalChanged } fmi3IntervalQualifier;
typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment, fmi3Status, fmi3String,
                                       fmi3String);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment, fmi3Float64, fmi3Boolean,
                                               fmi3Boolean, fmi3Boolean, fmi3Boolean,
                                               fmi3Boolean*, fmi3Float64*);
typedef void (*fmi3ClockUpdateCallback)(fmi3InstanceEnvironment);
typedef void (*fmi3LockPreemptionCallback)(void);
typedef void (*fmi3UnlockPreemptionCallback)(void);

/* the value reference of the independent variable `time` */
#define TIME_VR ((fmi3ValueReference)FMU_N_VARS)

#define W_MAGIC 0x33464d55u   /* "UMF3" */

/* An FMI 3.0 instance: the shared instance and what FMI 3.0 adds. */
typedef struct {
    unsigned magic;
    Inst* in;
    fmi3InstanceEnvironment env;
    fmi3LogMessageCallback log;
    int event_mode_used;
    int early_return_allowed;
    int event_mode;          /* in Event Mode (in->mode is STEP_MODE then) */
} W;

/* ------------------------------------------------------------------ messages
 * The shared code names FMI 2.0 functions; the host of this FMU knows the FMI 3.0 ones. */
static const char* const RENAMED[][2] = {
    {"fmi2GetReal", "fmi3GetFloat64"}, {"fmi2SetReal", "fmi3SetFloat64"},
    {"fmi2GetInteger", "fmi3GetInt32"}, {"fmi2SetInteger", "fmi3SetInt32"},
    {"fmi2Instantiate", "fmi3InstantiateCoSimulation"},
    {"fmi2SetupExperiment", "fmi3EnterInitializationMode"},
    {"fmi2GetFMUstate", "fmi3GetFMUState"}, {"fmi2SetFMUstate", "fmi3SetFMUState"},
    {"fmi2FreeFMUstate", "fmi3FreeFMUState"},
    {"fmi2SerializedFMUstateSize", "fmi3SerializedFMUStateSize"},
    {"fmi2SerializeFMUstate", "fmi3SerializeFMUState"},
    {"fmi2DeSerializeFMUstate", "fmi3DeserializeFMUState"},
    {"FMI 2.0", "FMI 3.0"}, {"slave initialized (stepping)", "step mode"},
    {"GUID", "instantiation token"}, {"*FMUstate", "*FMUState"},
    {"fmi2Terminated is true", "terminateSimulation is true"},
};

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void fmi3_text(char* out, size_t cap, const char* s)
{
    size_t j = 0;
    const size_t nr = sizeof RENAMED / sizeof RENAMED[0];
    while (*s && j + 1 < cap) {
        int done = 0;
        for (size_t k = 0; k < nr && !done; ++k) {
            size_t n = strlen(RENAMED[k][0]);
            if (strncmp(s, RENAMED[k][0], n) == 0
                && (RENAMED[k][0][0] != 'f' || !ident_char(s[n]))) {
                size_t m = strlen(RENAMED[k][1]);
                for (size_t i = 0; i < m && j + 1 < cap; ++i) {
                    out[j++] = RENAMED[k][1][i];
                }
                s += n;
                done = 1;
            }
        }
        if (done) {
            continue;
        }
        if (strncmp(s, "fmi2", 4) == 0) {
            const char* r = "fmi3";
            for (int i = 0; i < 4 && j + 1 < cap; ++i) {
                out[j++] = r[i];
            }
            s += 4;
            continue;
        }
        out[j++] = *s++;
    }
    out[j] = '\0';
}

/* The FMI 2.0 logger the shared code calls: the message (its '%' doubled for an FMI 2.0
 * logger's format) goes to the FMI 3.0 logMessage callback. */
static void log3(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                 fmi2String category, fmi2String message, ...)
{
    (void)name;
    W* w = (W*)env;
    if (w == NULL || w->log == NULL || message == NULL) {
        return;
    }
    char plain[2 * MSG + 1], text[2 * MSG + 1];
    va_list args;
    va_start(args, message);
    vsnprintf(plain, sizeof plain, message, args);
    va_end(args);
    fmi3_text(text, sizeof text, plain);
    w->log(w->env, (fmi3Status)status, category, text);
}

/* The instance, or NULL (not an instance of this FMU: nothing to log through). The shared
 * instance gets this library's logger at every call: no pointer into a library that a host
 * may have unloaded and loaded again survives between calls. */
static W* get3(fmi3Instance x)
{
    W* w = (W*)x;
    if (!live_object(w, W_MAGIC) || w->in == NULL) {
        return NULL;
    }
    w->in->logger = log3;
    w->in->env = w;
    return w;
}

#define SAY3(w, status, ...) ((fmi3Status)say((w)->in, (fmi2Status)(status), __VA_ARGS__))

/* Refuse in Event Mode a call that FMI 3.0 allows only in Step Mode (or vice versa). */
static int refuse_event_mode(W* w, const char* fn, int need_event_mode)
{
    if (w->event_mode == need_event_mode && w->in->mode == STEP_MODE) {
        return 0;
    }
    const char* now = w->in->mode != STEP_MODE ? mode_name(w->in->mode)
                    : w->event_mode ? "event mode" : "step mode";
    say(w->in, fmi2Error, "%s: not allowed in state '%s' (FMI 3.0 allows it in %s%s); the call "
        "was refused and changed nothing", fn, now, need_event_mode ? "event mode" : "step mode",
        need_event_mode && !w->event_mode_used ? "; this instance was made with eventModeUsed "
        "= false" : "");
    return -1;
}

/* ------------------------------------------------------------------ life cycle */
FMI3_EXPORT const char* fmi3GetVersion(void) { return "3.0"; }

FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
    fmi3Boolean earlyReturnAllowed, const fmi3ValueReference requiredIntermediateVariables[],
    size_t nRequiredIntermediateVariables, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3IntermediateUpdateCallback intermediateUpdate)
{
    (void)intermediateUpdate;   /* no intermediate updates: doStep computes the whole step */
    W* w = calloc(1, sizeof *w);
    if (w == NULL) {
        if (logMessage) {
            logMessage(instanceEnvironment, fmi3Error, "logStatusError",
                       "fmi3InstantiateCoSimulation: out of memory");
        }
        return NULL;
    }
    w->env = instanceEnvironment;
    w->log = logMessage;
    w->event_mode_used = eventModeUsed ? 1 : 0;
    w->early_return_allowed = earlyReturnAllowed ? 1 : 0;
    fmi2CallbackFunctions cb = {log3, NULL, NULL, NULL, w};
    Inst* in = (Inst*)fmi2Instantiate(instanceName, fmi2CoSimulation, instantiationToken,
                                      resourcePath, &cb, visible, loggingOn);
    if (in == NULL) {
        free(w);
        return NULL;
    }
    w->in = in;
    w->magic = W_MAGIC;
    for (size_t k = 0; k < nRequiredIntermediateVariables; ++k) {
        if (requiredIntermediateVariables == NULL
            || requiredIntermediateVariables[k] > TIME_VR) {
            say(in, fmi2Error, "fmi3InstantiateCoSimulation: required intermediate variable %zu "
                "(value reference %u) does not exist (this FMU has 0 to %u); no instance made",
                k, requiredIntermediateVariables ? requiredIntermediateVariables[k] : 0u,
                TIME_VR);
            fmi2FreeInstance(in);
            w->magic = 0;
            free(w);
            return NULL;
        }
    }
    return w;
}

static fmi3Instance refuse_instantiate(fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                       const char* fn, const char* kind)
{
    if (log) {
        char text[MSG];
        snprintf(text, sizeof text, "%s: this FMU has no %s (use "
                 "fmi3InstantiateCoSimulation%s); no instance made", fn, kind,
                 FMU_HAS_ME ? " or fmi3InstantiateModelExchange" : "");
        log(env, fmi3Error, "logStatusError", text);
    }
    return NULL;
}

/* model exchange (me3.c) */
static fmi3Instance me3_instantiate(fmi3String, fmi3String, fmi3String, fmi3Boolean,
                                    fmi3Boolean, fmi3InstanceEnvironment,
                                    fmi3LogMessageCallback);
static fmi3Status me3_indicator_values(W* w, const fmi3ValueReference vr[], size_t n,
                                       fmi3Float64 values[]);
static fmi3Status me3_update(W* w, fmi3Boolean*, fmi3Boolean*, fmi3Boolean*, fmi3Boolean*,
                             fmi3Boolean*, fmi3Float64*);

FMI3_EXPORT fmi3Instance fmi3InstantiateModelExchange(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage)
{
    return me3_instantiate(instanceName, instantiationToken, resourcePath, visible, loggingOn,
                           instanceEnvironment, logMessage);
}

FMI3_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(
    fmi3String instanceName, fmi3String instantiationToken, fmi3String resourcePath,
    fmi3Boolean visible, fmi3Boolean loggingOn, fmi3InstanceEnvironment instanceEnvironment,
    fmi3LogMessageCallback logMessage, fmi3ClockUpdateCallback clockUpdate,
    fmi3LockPreemptionCallback lockPreemption, fmi3UnlockPreemptionCallback unlockPreemption)
{
    (void)instanceName, (void)instantiationToken, (void)resourcePath, (void)visible;
    (void)loggingOn, (void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
    return refuse_instantiate(instanceEnvironment, logMessage,
                              "fmi3InstantiateScheduledExecution", "scheduled execution");
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return;
    }
    fmi2FreeInstance(w->in);
    w->in = NULL;
    w->magic = 0;
    forget_object(w);
    free(w);
}

FMI3_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance instance, fmi3Boolean loggingOn,
                                           size_t nCategories, const fmi3String categories[])
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return (fmi3Status)fmi2SetDebugLogging(w->in, loggingOn, nCategories, categories);
}

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance instance,
                                                   fmi3Boolean toleranceDefined,
                                                   fmi3Float64 tolerance, fmi3Float64 startTime,
                                                   fmi3Boolean stopTimeDefined,
                                                   fmi3Float64 stopTime)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Status s = fmi2SetupExperiment(w->in, toleranceDefined, tolerance, startTime,
                                       stopTimeDefined, stopTime);
    if (s != fmi2OK) {
        return (fmi3Status)s;
    }
    return (fmi3Status)fmi2EnterInitializationMode(w->in);
}

FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Status s = fmi2ExitInitializationMode(w->in);
    if (s == fmi2OK) {
        w->event_mode = w->event_mode_used;   /* FMI 3.0: Event Mode when the master uses it */
    }
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (!w->event_mode_used) {
        return SAY3(w, fmi3Error, "fmi3EnterEventMode: this instance was made with "
                    "eventModeUsed = false; the call was refused and changed nothing");
    }
    if (refuse_event_mode(w, "fmi3EnterEventMode", 0) != 0) {
        return fmi3Error;
    }
    w->event_mode = 1;
    w->in->me_mode = ME_EVENT;            /* (model exchange's Event Mode, me2.c) */
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (refuse_event_mode(w, "fmi3EnterStepMode", 1) != 0) {
        return fmi3Error;
    }
    w->event_mode = 0;
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance instance,
                                                fmi3Boolean* discreteStatesNeedUpdate,
                                                fmi3Boolean* terminateSimulation,
                                                fmi3Boolean* nominalsOfContinuousStatesChanged,
                                                fmi3Boolean* valuesOfContinuousStatesChanged,
                                                fmi3Boolean* nextEventTimeDefined,
                                                fmi3Float64* nextEventTime)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (refuse_event_mode(w, "fmi3UpdateDiscreteStates", 1) != 0) {
        return fmi3Error;
    }
    if (!discreteStatesNeedUpdate || !terminateSimulation || !nominalsOfContinuousStatesChanged
        || !valuesOfContinuousStatesChanged || !nextEventTimeDefined || !nextEventTime) {
        return SAY3(w, fmi3Error, "fmi3UpdateDiscreteStates: a NULL pointer for an out "
                    "argument; nothing was done");
    }
    if (w->in->me) {                      /* model exchange: an event iteration (me3.c) */
        return me3_update(w, discreteStatesNeedUpdate, terminateSimulation,
                          nominalsOfContinuousStatesChanged, valuesOfContinuousStatesChanged,
                          nextEventTimeDefined, nextEventTime);
    }
    *discreteStatesNeedUpdate = false;        /* no discrete states: nothing to iterate */
    *terminateSimulation = false;
    *nominalsOfContinuousStatesChanged = false;
    *valuesOfContinuousStatesChanged = false;
    *nextEventTimeDefined = false;
    *nextEventTime = 0.0;
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return SAY3(w, fmi3Error, "fmi3EvaluateDiscreteStates: this FMU has no clocks and no "
                "discrete states");
}

FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Status s = fmi2Terminate(w->in);     /* allowed in Step Mode and Event Mode */
    if (s == fmi2OK) {
        w->event_mode = 0;
    }
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Status s = fmi2Reset(w->in);
    if (s == fmi2OK) {
        w->event_mode = 0;
    }
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return SAY3(w, fmi3Error, "fmi3EnterConfigurationMode: this FMU has no structural "
                "parameters that can change (rebuild with fmu-mb build MODEL.py --set "
                "NAME=VALUE); the call was refused and changed nothing");
}

FMI3_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return SAY3(w, fmi3Error, "fmi3ExitConfigurationMode: not in configuration mode (this FMU "
                "has none)");
}

/* ------------------------------------------------------------------ values */
static const char* type3_name(int t)
{
    return t == VT_REAL ? "Float64" : t == VT_INTEGER ? "Int32" : t == VT_BOOLEAN ? "Boolean"
                                                                                 : "String";
}

/* Check value references, their type (VT_*, or -1 for a type no variable has: name3 names
 * it) and the number of values; fmi3OK or a logged fmi3Error. time_ok: `time` may be read. */
static fmi3Status check3(W* w, const char* fn, const fmi3ValueReference vr[], size_t nvr,
                         const void* values, size_t nvalues, int type, const char* name3,
                         int time_ok)
{
    if (nvr > 0 && (vr == NULL || values == NULL)) {
        return SAY3(w, fmi3Error, "%s: NULL %s array for %zu values; nothing was done", fn,
                    vr == NULL ? "value reference" : "value", nvr);
    }
    if (nvalues != nvr) {
        return SAY3(w, fmi3Error, "%s: %zu values for %zu value references; every variable of "
                    "this FMU is a scalar (nValues must equal nValueReferences); nothing was "
                    "done", fn, nvalues, nvr);
    }
    for (size_t k = 0; k < nvr; ++k) {
        if (vr[k] == TIME_VR) {
            if (time_ok && type == VT_REAL) {
                continue;
            }
            return SAY3(w, fmi3Error, "%s: value reference %u is 'time', the independent "
                        "variable: a Float64 read with fmi3GetFloat64, never set; nothing was "
                        "done", fn, vr[k]);
        }
        if (vr[k] > TIME_VR && time_ok && type == VT_REAL
            && vr[k] <= TIME_VR + FMU_N_EVENT_INDICATORS) {
            continue;                     /* an event indicator (model exchange, me3.c) */
        }
        if (vr[k] > TIME_VR) {
            return SAY3(w, fmi3Error, "%s: value reference %u does not exist (this FMU has 0 to "
                        "%u); nothing was done", fn, vr[k], TIME_VR + FMU_N_EVENT_INDICATORS);
        }
        const FmuVar* v = &FMU_VARS[vr[k]];
        if (v->type != type) {
            return SAY3(w, fmi3Error, "%s: value reference %u ('%s') is a %s, not a %s; nothing "
                        "was done", fn, vr[k], v->name, type3_name(v->type),
                        type < 0 ? name3 : type3_name(type));
        }
    }
    return fmi3OK;
}

static double time_of(const Inst* in)
{
    if (in->mode & (STEP_MODE | TERMINATED)) {
        return mbe_time(in->engine);
    }
    return in->start_set ? in->start_time : FMU_START_TIME;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t nvr, fmi3Float64 values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3GetFloat64", vr, nvr, values, nValues, VT_REAL, NULL, 1);
    if (s != fmi3OK) {
        return s;
    }
    size_t k = 0;
    while (k < nvr) {          /* runs of model variables go to the shared code in one call */
        if (vr[k] == TIME_VR) {
            if (!enter(w->in, "fmi3GetFloat64", INIT_MODE | STEP_MODE | TERMINATED)) {
                return fmi3Error;
            }
            values[k] = time_of(w->in);
            k++;
            continue;
        }
        if (vr[k] > TIME_VR) {
            fmi3Status si = me3_indicator_values(w, vr + k, 1, values + k);
            if (si != fmi3OK) {
                return si;
            }
            k++;
            continue;
        }
        size_t e = k;
        while (e < nvr && vr[e] < TIME_VR) {
            e++;
        }
        fmi2Status st = fmi2GetReal(w->in, vr + k, e - k, values + k);
        if (st != fmi2OK) {
            return (fmi3Status)st;
        }
        k = e;
    }
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t nvr, const fmi3Float64 values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3SetFloat64", vr, nvr, values, nValues, VT_REAL, NULL, 0);
    return s != fmi3OK ? s : (fmi3Status)fmi2SetReal(w->in, vr, nvr, values);
}

FMI3_EXPORT fmi3Status fmi3GetInt32(fmi3Instance instance, const fmi3ValueReference vr[],
                                    size_t nvr, fmi3Int32 values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3GetInt32", vr, nvr, values, nValues, VT_INTEGER, NULL, 0);
    return s != fmi3OK ? s : (fmi3Status)fmi2GetInteger(w->in, vr, nvr, (fmi2Integer*)values);
}

FMI3_EXPORT fmi3Status fmi3SetInt32(fmi3Instance instance, const fmi3ValueReference vr[],
                                    size_t nvr, const fmi3Int32 values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3SetInt32", vr, nvr, values, nValues, VT_INTEGER, NULL, 0);
    return s != fmi3OK ? s
                       : (fmi3Status)fmi2SetInteger(w->in, vr, nvr, (const fmi2Integer*)values);
}

FMI3_EXPORT fmi3Status fmi3GetBoolean(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t nvr, fmi3Boolean values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3GetBoolean", vr, nvr, values, nValues, VT_BOOLEAN, NULL, 0);
    if (s != fmi3OK || nvr == 0) {
        return s;
    }
    fmi2Boolean* tmp = malloc(nvr * sizeof *tmp);
    if (tmp == NULL) {
        return SAY3(w, fmi3Error, "fmi3GetBoolean: out of memory");
    }
    fmi2Status st = fmi2GetBoolean(w->in, vr, nvr, tmp);
    if (st == fmi2OK) {
        for (size_t k = 0; k < nvr; ++k) {
            values[k] = tmp[k] != 0;
        }
    }
    free(tmp);
    return (fmi3Status)st;
}

FMI3_EXPORT fmi3Status fmi3SetBoolean(fmi3Instance instance, const fmi3ValueReference vr[],
                                      size_t nvr, const fmi3Boolean values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3SetBoolean", vr, nvr, values, nValues, VT_BOOLEAN, NULL, 0);
    if (s != fmi3OK || nvr == 0) {
        return s;
    }
    fmi2Boolean* tmp = malloc(nvr * sizeof *tmp);
    if (tmp == NULL) {
        return SAY3(w, fmi3Error, "fmi3SetBoolean: out of memory");
    }
    for (size_t k = 0; k < nvr; ++k) {
        tmp[k] = values[k] ? 1 : 0;
    }
    fmi2Status st = fmi2SetBoolean(w->in, vr, nvr, tmp);
    free(tmp);
    return (fmi3Status)st;
}

FMI3_EXPORT fmi3Status fmi3GetString(fmi3Instance instance, const fmi3ValueReference vr[],
                                     size_t nvr, fmi3String values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3GetString", vr, nvr, values, nValues, VT_STRING, NULL, 0);
    return s != fmi3OK ? s : (fmi3Status)fmi2GetString(w->in, vr, nvr, values);
}

FMI3_EXPORT fmi3Status fmi3SetString(fmi3Instance instance, const fmi3ValueReference vr[],
                                     size_t nvr, const fmi3String values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi3Status s = check3(w, "fmi3SetString", vr, nvr, values, nValues, VT_STRING, NULL, 0);
    return s != fmi3OK ? s : (fmi3Status)fmi2SetString(w->in, vr, nvr, values);
}

/* The types of which this FMU has no variable: nothing to get or set (n = 0 is fine). */
#define NO_SUCH_TYPE(Fn, Type, Name)                                                          \
    FMI3_EXPORT fmi3Status Fn(fmi3Instance instance, const fmi3ValueReference vr[],           \
                              size_t nvr, Type values[], size_t nValues)                      \
    {                                                                                         \
        W* w = get3(instance);                                                                \
        if (w == NULL) {                                                                      \
            return fmi3Error;                                                                 \
        }                                                                                     \
        return check3(w, #Fn, vr, nvr, values, nValues, -1, Name, 0);                         \
    }

NO_SUCH_TYPE(fmi3GetFloat32, fmi3Float32, "Float32")
NO_SUCH_TYPE(fmi3GetInt8, fmi3Int8, "Int8")
NO_SUCH_TYPE(fmi3GetUInt8, fmi3UInt8, "UInt8")
NO_SUCH_TYPE(fmi3GetInt16, fmi3Int16, "Int16")
NO_SUCH_TYPE(fmi3GetUInt16, fmi3UInt16, "UInt16")
NO_SUCH_TYPE(fmi3GetUInt32, fmi3UInt32, "UInt32")
NO_SUCH_TYPE(fmi3GetInt64, fmi3Int64, "Int64")
NO_SUCH_TYPE(fmi3GetUInt64, fmi3UInt64, "UInt64")
NO_SUCH_TYPE(fmi3SetFloat32, const fmi3Float32, "Float32")
NO_SUCH_TYPE(fmi3SetInt8, const fmi3Int8, "Int8")
NO_SUCH_TYPE(fmi3SetUInt8, const fmi3UInt8, "UInt8")
NO_SUCH_TYPE(fmi3SetInt16, const fmi3Int16, "Int16")
NO_SUCH_TYPE(fmi3SetUInt16, const fmi3UInt16, "UInt16")
NO_SUCH_TYPE(fmi3SetUInt32, const fmi3UInt32, "UInt32")
NO_SUCH_TYPE(fmi3SetInt64, const fmi3Int64, "Int64")
NO_SUCH_TYPE(fmi3SetUInt64, const fmi3UInt64, "UInt64")

FMI3_EXPORT fmi3Status fmi3GetBinary(fmi3Instance instance, const fmi3ValueReference vr[],
                                     size_t nvr, size_t valueSizes[], fmi3Binary values[],
                                     size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    (void)valueSizes;
    return check3(w, "fmi3GetBinary", vr, nvr, values, nValues, -1, "Binary", 0);
}

FMI3_EXPORT fmi3Status fmi3SetBinary(fmi3Instance instance, const fmi3ValueReference vr[],
                                     size_t nvr, const size_t valueSizes[],
                                     const fmi3Binary values[], size_t nValues)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    (void)valueSizes;
    return check3(w, "fmi3SetBinary", vr, nvr, values, nValues, -1, "Binary", 0);
}

FMI3_EXPORT fmi3Status fmi3GetClock(fmi3Instance instance, const fmi3ValueReference vr[],
                                    size_t nvr, fmi3Clock values[])
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return check3(w, "fmi3GetClock", vr, nvr, values, nvr, -1, "Clock", 0);
}

FMI3_EXPORT fmi3Status fmi3SetClock(fmi3Instance instance, const fmi3ValueReference vr[],
                                    size_t nvr, const fmi3Clock values[])
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return check3(w, "fmi3SetClock", vr, nvr, values, nvr, -1, "Clock", 0);
}

/* ------------------------------------------------------------------ FMU states */
FMI3_EXPORT fmi3Status fmi3GetFMUState(fmi3Instance instance, fmi3FMUState* FMUState)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2GetFMUstate(w->in, FMUState) : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SetFMUState(fmi3Instance instance, fmi3FMUState FMUState)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2SetFMUstate(w->in, FMUState) : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance instance, fmi3FMUState* FMUState)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2FreeFMUstate(w->in, FMUState) : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance instance, fmi3FMUState FMUState,
                                                  size_t* size)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2SerializedFMUstateSize(w->in, FMUState, size) : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance instance, fmi3FMUState FMUState,
                                             fmi3Byte serializedState[], size_t size)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2SerializeFMUstate(w->in, FMUState, (fmi2Byte*)serializedState,
                                                 size)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance instance,
                                               const fmi3Byte serializedState[], size_t size,
                                               fmi3FMUState* FMUState)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2DeSerializeFMUstate(w->in, (const fmi2Byte*)serializedState,
                                                   size, FMUState)
             : fmi3Error;
}

/* ------------------------------------------------------------------ stepping */
/* One engine step of the shared code. With earlyReturnAllowed the step ends at the first
 * impact inside it (mbe_do_step_to_event: the engine locates it on the integrator's dense
 * output and applies it; *event = 1 and the FMU's time is the impact's); otherwise the engine
 * integrates the whole communication step, every event inside it handled there. A model
 * without contacts never stops early. */
static fmi2Status step_engine(W* w, double t, double h, int no_set_prior, int* event)
{
    (void)no_set_prior;
    *event = 0;
    if (w->early_return_allowed && mbe_n_contacts(w->in->engine) > 0)
        return do_step(w->in, t, h, 1, event);
    return do_step(w->in, t, h, 0, NULL);
}

FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance instance, fmi3Float64 currentCommunicationPoint,
                                  fmi3Float64 communicationStepSize,
                                  fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                  fmi3Boolean* eventHandlingNeeded,
                                  fmi3Boolean* terminateSimulation, fmi3Boolean* earlyReturn,
                                  fmi3Float64* lastSuccessfulTime)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (!enter(w->in, "fmi3DoStep", STEP_MODE) || refuse_event_mode(w, "fmi3DoStep", 0) != 0) {
        return fmi3Error;
    }
    if (!eventHandlingNeeded || !terminateSimulation || !earlyReturn || !lastSuccessfulTime) {
        return SAY3(w, fmi3Error, "fmi3DoStep: a NULL pointer for an out argument "
                    "(eventHandlingNeeded, terminateSimulation, earlyReturn, "
                    "lastSuccessfulTime); the step was not taken");
    }
    int event = 0;
    fmi2Status s = step_engine(w, currentCommunicationPoint, communicationStepSize,
                               noSetFMUStatePriorToCurrentPoint, &event);
    *eventHandlingNeeded = event && w->event_mode_used;
    *terminateSimulation = w->in->stuck != 0;   /* discarded in the model: the same call would
                                                   fail again (fmi2_native.c's do_step) */
    *earlyReturn = event && w->early_return_allowed
                   && mbe_time(w->in->engine) < currentCommunicationPoint + communicationStepSize;
    *lastSuccessfulTime = mbe_time(w->in->engine);
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance instance,
                                                const fmi3ValueReference vr[], size_t nvr,
                                                const fmi3Int32 orders[], fmi3Float64 values[],
                                                size_t nValues)
{
    (void)vr, (void)nvr, (void)orders, (void)values, (void)nValues;
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return SAY3(w, fmi3Error, "fmi3GetOutputDerivatives: not provided "
                "(maxOutputDerivativeOrder = 0)");
}

/* ------------------------------------------------------------------ not provided */
static fmi3Status not_provided(fmi3Instance instance, const char* fn, const char* why)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    return SAY3(w, fmi3Error, "%s: %s; the call was refused and changed nothing", fn, why);
}

#define NO_CLOCKS "this FMU has no clocks"

FMI3_EXPORT fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance instance,
                                                           fmi3ValueReference valueReference,
                                                           size_t* nDependencies)
{
    (void)valueReference, (void)nDependencies;
    return not_provided(instance, "fmi3GetNumberOfVariableDependencies", "the variable "
                        "dependencies are not provided (every output may depend on every input "
                        "and parameter)");
}

FMI3_EXPORT fmi3Status fmi3GetVariableDependencies(fmi3Instance instance,
                                                   fmi3ValueReference dependent,
                                                   size_t elementIndicesOfDependent[],
                                                   fmi3ValueReference independents[],
                                                   size_t elementIndicesOfIndependents[],
                                                   fmi3DependencyKind dependencyKinds[],
                                                   size_t nDependencies)
{
    (void)dependent, (void)elementIndicesOfDependent, (void)independents;
    (void)elementIndicesOfIndependents, (void)dependencyKinds, (void)nDependencies;
    return not_provided(instance, "fmi3GetVariableDependencies", "the variable dependencies "
                        "are not provided (every output may depend on every input and "
                        "parameter)");
}

FMI3_EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance instance,
                                                    const fmi3ValueReference unknowns[],
                                                    size_t nUnknowns,
                                                    const fmi3ValueReference knowns[],
                                                    size_t nKnowns, const fmi3Float64 seed[],
                                                    size_t nSeed, fmi3Float64 sensitivity[],
                                                    size_t nSensitivity)
{
    /* the shared fmi2GetDirectionalDerivative (fmi2_native.c) */
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (nSeed != nKnowns || nSensitivity != nUnknowns) {
        return SAY3(w, fmi3Error, "fmi3GetDirectionalDerivative: %zu seeds for %zu knowns and "
                    "%zu sensitivities for %zu unknowns; expected one per known and one per "
                    "unknown (scalar variables); nothing was done", nSeed, nKnowns,
                    nSensitivity, nUnknowns);
    }
    for (size_t k = 0; k < nUnknowns + nKnowns; ++k) {
        const fmi3ValueReference* list = k < nUnknowns ? unknowns : knowns;
        if (list == NULL) {
            break;                       /* refused with its message by the shared code */
        }
        fmi3ValueReference vr = list[k < nUnknowns ? k : k - nUnknowns];
        if (vr == TIME_VR) {
            return SAY3(w, fmi3Error, "fmi3GetDirectionalDerivative: value reference %u is the "
                        "independent variable time: neither a state, an input, an output nor "
                        "a state derivative; nothing was done", vr);
        }
    }
    Inst* in = enter(w->in, "fmi3GetDirectionalDerivative", INIT_MODE | STEP_MODE | TERMINATED);
    if (in == NULL) {
        return fmi3Error;
    }
    return (fmi3Status)directional_derivative(in, "fmi3GetDirectionalDerivative", unknowns,
                                              nUnknowns, knowns, nKnowns, seed, sensitivity);
}

FMI3_EXPORT fmi3Status fmi3GetAdjointDerivative(fmi3Instance instance,
                                                const fmi3ValueReference unknowns[],
                                                size_t nUnknowns,
                                                const fmi3ValueReference knowns[],
                                                size_t nKnowns, const fmi3Float64 seed[],
                                                size_t nSeed, fmi3Float64 sensitivity[],
                                                size_t nSensitivity)
{
    (void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed;
    (void)sensitivity, (void)nSensitivity;
    return not_provided(instance, "fmi3GetAdjointDerivative", "providesAdjointDerivatives = "
                        "false");
}

FMI3_EXPORT fmi3Status fmi3GetIntervalDecimal(fmi3Instance instance,
                                              const fmi3ValueReference vr[], size_t nvr,
                                              fmi3Float64 intervals[],
                                              fmi3IntervalQualifier qualifiers[])
{
    (void)vr, (void)nvr, (void)intervals, (void)qualifiers;
    return not_provided(instance, "fmi3GetIntervalDecimal", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3GetIntervalFraction(fmi3Instance instance,
                                               const fmi3ValueReference vr[], size_t nvr,
                                               fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                               fmi3IntervalQualifier qualifiers[])
{
    (void)vr, (void)nvr, (void)counters, (void)resolutions, (void)qualifiers;
    return not_provided(instance, "fmi3GetIntervalFraction", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3GetShiftDecimal(fmi3Instance instance, const fmi3ValueReference vr[],
                                           size_t nvr, fmi3Float64 shifts[])
{
    (void)vr, (void)nvr, (void)shifts;
    return not_provided(instance, "fmi3GetShiftDecimal", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3GetShiftFraction(fmi3Instance instance, const fmi3ValueReference vr[],
                                            size_t nvr, fmi3UInt64 counters[],
                                            fmi3UInt64 resolutions[])
{
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    return not_provided(instance, "fmi3GetShiftFraction", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3SetIntervalDecimal(fmi3Instance instance,
                                              const fmi3ValueReference vr[], size_t nvr,
                                              const fmi3Float64 intervals[])
{
    (void)vr, (void)nvr, (void)intervals;
    return not_provided(instance, "fmi3SetIntervalDecimal", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3SetIntervalFraction(fmi3Instance instance,
                                               const fmi3ValueReference vr[], size_t nvr,
                                               const fmi3UInt64 counters[],
                                               const fmi3UInt64 resolutions[])
{
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    return not_provided(instance, "fmi3SetIntervalFraction", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3SetShiftDecimal(fmi3Instance instance, const fmi3ValueReference vr[],
                                           size_t nvr, const fmi3Float64 shifts[])
{
    (void)vr, (void)nvr, (void)shifts;
    return not_provided(instance, "fmi3SetShiftDecimal", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3SetShiftFraction(fmi3Instance instance, const fmi3ValueReference vr[],
                                            size_t nvr, const fmi3UInt64 counters[],
                                            const fmi3UInt64 resolutions[])
{
    (void)vr, (void)nvr, (void)counters, (void)resolutions;
    return not_provided(instance, "fmi3SetShiftFraction", NO_CLOCKS);
}

FMI3_EXPORT fmi3Status fmi3ActivateModelPartition(fmi3Instance instance,
                                                  fmi3ValueReference clockReference,
                                                  fmi3Float64 activationTime)
{
    (void)clockReference, (void)activationTime;
    return not_provided(instance, "fmi3ActivateModelPartition", "this FMU is a co-simulation "
                        "FMU (no scheduled execution)");
}

/* Model exchange */
#include "me3.c"
