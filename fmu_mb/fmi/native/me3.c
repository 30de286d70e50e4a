/*
 * fmu_mb native FMU: the FMI 3.0 model-exchange interface, included by
 * fmi3_native.c. Each function is the FMI 2.0 one of me2.c (the same instance, states, event
 * indicators and event iterations) with FMI 3.0's names and types; an ME instance is a W with
 * eventModeUsed (its Event Mode is W.event_mode, kept equal to the shared instance's
 * me_mode). The event indicators are also variables (native_me.add_model_exchange3: value
 * references TIME_VR + 1 ...), read with fmi3GetFloat64 (me3_indicator_values).
 */

/* log3 for fmi2Instantiate called by fmi3InstantiateModelExchange: its messages name the
 * function the host called */
static void log3me(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)name;
    W* w = (W*)env;
    if (w == NULL || w->log == NULL || message == NULL) {
        return;
    }
    char plain[2 * MSG + 1], text[2 * MSG + 1], out[2 * MSG + 64];
    va_list args;
    va_start(args, message);
    vsnprintf(plain, sizeof plain, message, args);
    va_end(args);
    fmi3_text(text, sizeof text, plain);
    const char* from = "fmi3InstantiateCoSimulation";
    const char* at = strstr(text, from);
    if (at != NULL) {
        snprintf(out, sizeof out, "%.*sfmi3InstantiateModelExchange%s", (int)(at - text), text,
                 at + strlen(from));
    } else {
        snprintf(out, sizeof out, "%s", text);
    }
    w->log(w->env, (fmi3Status)status, category, out);
}

/* fmi3InstantiateModelExchange: the shared instance made with fmi2ModelExchange. */
static fmi3Instance me3_instantiate(fmi3String instanceName, fmi3String instantiationToken,
                                    fmi3String resourcePath, fmi3Boolean visible,
                                    fmi3Boolean loggingOn,
                                    fmi3InstanceEnvironment instanceEnvironment,
                                    fmi3LogMessageCallback logMessage)
{
    if (!FMU_HAS_ME) {
        return refuse_instantiate(instanceEnvironment, logMessage,
                                  "fmi3InstantiateModelExchange", "model exchange: the model "
                                  "has no continuous states");
    }
    W* w = calloc(1, sizeof *w);
    if (w == NULL) {
        if (logMessage) {
            logMessage(instanceEnvironment, fmi3Error, "logStatusError",
                       "fmi3InstantiateModelExchange: out of memory");
        }
        return NULL;
    }
    w->env = instanceEnvironment;
    w->log = logMessage;
    w->event_mode_used = 1;            /* model exchange always has Event Mode */
    fmi2CallbackFunctions cb = {log3me, NULL, NULL, NULL, w};
    Inst* in = (Inst*)fmi2Instantiate(instanceName, fmi2ModelExchange, instantiationToken,
                                      resourcePath, &cb, visible, loggingOn);
    if (in == NULL) {
        free(w);
        return NULL;
    }
    w->in = in;
    w->magic = W_MAGIC;
    return w;
}

/* The indicators' values for the value references TIME_VR + 1 ... (fmi3GetFloat64). */
static fmi3Status me3_indicator_values(W* w, const fmi3ValueReference vr[], size_t n,
                                       fmi3Float64 values[])
{
    double z[FMU_N_EVENT_INDICATORS + 1];
    if (!w->in->me) {
        return SAY3(w, fmi3Error, "fmi3GetFloat64: the event indicators (value references "
                    "%u to %u) are model exchange's; this instance was made for co-simulation",
                    TIME_VR + 1, TIME_VR + FMU_N_EVENT_INDICATORS);
    }
    fmi2Status st = fmi2GetEventIndicators(w->in, z, FMU_N_EVENT_INDICATORS);
    if (st != fmi2OK) {
        return (fmi3Status)st;
    }
    for (size_t k = 0; k < n; ++k) {
        values[k] = z[vr[k] - TIME_VR - 1];
    }
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance instance)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Status s = fmi2EnterContinuousTimeMode(w->in);
    if (s == fmi2OK) {
        w->event_mode = 0;
    }
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance instance,
                                                   fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                                   fmi3Boolean* enterEventMode,
                                                   fmi3Boolean* terminateSimulation)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    fmi2Boolean enter_event = 0, terminate = 0;
    fmi2Status s = fmi2CompletedIntegratorStep(w->in, noSetFMUStatePriorToCurrentPoint,
                                               enterEventMode ? &enter_event : NULL,
                                               terminateSimulation ? &terminate : NULL);
    if (s == fmi2OK) {
        *enterEventMode = enter_event != 0;
        *terminateSimulation = terminate != 0;
    }
    return (fmi3Status)s;
}

FMI3_EXPORT fmi3Status fmi3SetTime(fmi3Instance instance, fmi3Float64 time)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2SetTime(w->in, time) : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance instance,
                                               const fmi3Float64 continuousStates[],
                                               size_t nContinuousStates)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2SetContinuousStates(w->in, continuousStates, nContinuousStates)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance instance,
                                                         fmi3Float64 derivatives[],
                                                         size_t nContinuousStates)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2GetDerivatives(w->in, derivatives, nContinuousStates)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance instance,
                                              fmi3Float64 eventIndicators[],
                                              size_t nEventIndicators)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2GetEventIndicators(w->in, eventIndicators, nEventIndicators)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance instance,
                                               fmi3Float64 continuousStates[],
                                               size_t nContinuousStates)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2GetContinuousStates(w->in, continuousStates, nContinuousStates)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance instance,
                                                         fmi3Float64 nominals[],
                                                         size_t nContinuousStates)
{
    W* w = get3(instance);
    return w ? (fmi3Status)fmi2GetNominalsOfContinuousStates(w->in, nominals, nContinuousStates)
             : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance instance,
                                                      size_t* nEventIndicators)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (nEventIndicators == NULL) {
        return SAY3(w, fmi3Error, "fmi3GetNumberOfEventIndicators: NULL pointer");
    }
    *nEventIndicators = FMU_N_EVENT_INDICATORS;
    return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance instance,
                                                       size_t* nContinuousStates)
{
    W* w = get3(instance);
    if (w == NULL) {
        return fmi3Error;
    }
    if (nContinuousStates == NULL) {
        return SAY3(w, fmi3Error, "fmi3GetNumberOfContinuousStates: NULL pointer");
    }
    *nContinuousStates = FMU_HAS_ME ? (size_t)NX : 0;
    return fmi3OK;
}

/* fmi3UpdateDiscreteStates of an ME instance: one event iteration (me2.c me_update). */
static fmi3Status me3_update(W* w, fmi3Boolean* discreteStatesNeedUpdate,
                             fmi3Boolean* terminateSimulation,
                             fmi3Boolean* nominalsOfContinuousStatesChanged,
                             fmi3Boolean* valuesOfContinuousStatesChanged,
                             fmi3Boolean* nextEventTimeDefined, fmi3Float64* nextEventTime)
{
    fmi2EventInfo info = {0};
    fmi2Status s = fmi2NewDiscreteStates(w->in, &info);
    if (s > fmi2Warning) {
        return (fmi3Status)s;
    }
    *discreteStatesNeedUpdate = info.newDiscreteStatesNeeded != 0;
    *terminateSimulation = info.terminateSimulation != 0;
    *nominalsOfContinuousStatesChanged = info.nominalsOfContinuousStatesChanged != 0;
    *valuesOfContinuousStatesChanged = info.valuesOfContinuousStatesChanged != 0;
    *nextEventTimeDefined = info.nextEventTimeDefined != 0;
    *nextEventTime = info.nextEventTime;
    return (fmi3Status)s;
}
