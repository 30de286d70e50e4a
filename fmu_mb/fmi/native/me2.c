/*
 * fmu_mb native FMU: the FMI 2.0 model-exchange interface, included at the end of
 * fmi2_native.c (and so by fmi3_native.c, whose me3.c wraps it). One binary, both interfaces:
 * an instance made with fmuType fmi2ModelExchange shares everything with a co-simulation
 * instance (variables, parameters, initialisation, FMU states, directional derivatives) and
 * lets the host's solver integrate the continuous states instead of fmi2DoStep.
 *
 * The continuous states are the native FMU's states (ModelStructure/Derivatives, FMU_STATE_VR):
 * x = (q_i, qd_i) of the independent coordinates FMU_IND; fmi2SetContinuousStates closes the
 * loops for them (engine_me.h mbe_me_set_states: Newton from the last solution; refused with
 * fmi2Error, telling to use co-simulation, where they cannot be closed). Event indicators
 * (FMU_N_EVENT_INDICATORS): per contact the co-simulation event loop's event value (its gap in
 * flight, its normal force when persistent), with Coulomb friction at a contact then per
 * contact its stick/slip value, then the coordinate partition's condition minus 1e-3 when the
 * model has dependent coordinates (engine_me.h). Event Mode runs the event loop's impact,
 * release and stick/slip transitions (fmi2NewDiscreteStates: valuesOfContinuousStatesChanged
 * after a change of the velocities or the contacts' phases) with its Zeno guard; the partition's indicator crossing zero is logged as a
 * warning (the results lose accuracy there; co-simulation projects instead).
 *
 * The ME instance is in STEP_MODE once initialised (so the shared getters, setters and FMU
 * states treat it as an initialised instance), with me_mode telling Event Mode from
 * Continuous-Time Mode.
 */
#ifndef FMU_N_EVENT_INDICATORS
#define FMU_N_EVENT_INDICATORS 0
#endif
#ifndef FMU_HAS_ME
#define FMU_HAS_ME 0
#endif

typedef struct {
    fmi2Boolean newDiscreteStatesNeeded;
    fmi2Boolean terminateSimulation;
    fmi2Boolean nominalsOfContinuousStatesChanged;
    fmi2Boolean valuesOfContinuousStatesChanged;
    fmi2Boolean nextEventTimeDefined;
    fmi2Real nextEventTime;
} fmi2EventInfo;

#define NX (2 * FMU_N_IND)

static const char* me_mode_name(const Inst* in)
{
    return in->me_mode == ME_EVENT ? "event mode" : "continuous-time mode";
}

/* The ME instance in one of the modes `modes` (ME_EVENT | ME_CT) after initialisation, or in
 * initialization mode when `init` (the initial state then configured); NULL after a logged
 * refusal. */
static Inst* me_enter(fmi2Component c, const char* fn, int modes, int init)
{
    Inst* in = enter(c, fn, (init ? INIT_MODE : 0) | STEP_MODE | TERMINATED);
    if (!in) {
        return NULL;
    }
    if (!in->me) {
        say(in, fmi2Error, "%s: this instance was made for co-simulation (fmuType "
            "fmi2CoSimulation); the model-exchange functions need an instance made with "
            "fmi2ModelExchange", fn);
        return NULL;
    }
    if (in->mode == INIT_MODE) {
        if ((!in->configured || in->dirty) && configure(in, fn) != 0) {
            return NULL;
        }
        return in;
    }
    if (in->mode == TERMINATED ? !(modes & ME_TERMINATED) : !(modes & in->me_mode)) {
        say(in, fmi2Error, "%s: not allowed in %s (FMI 2.0 model exchange allows it in %s%s%s); "
            "the call was refused and changed nothing", fn,
            in->mode == TERMINATED ? "state 'terminated'" : me_mode_name(in),
            modes & ME_EVENT ? "event mode" : "",
            (modes & ME_EVENT) && (modes & ME_CT) ? " and " : "",
            modes & ME_CT ? "continuous-time mode" : "");
        return NULL;
    }
    return in;
}

static fmi2Status me_array(Inst* in, const char* fn, const void* p, size_t n, size_t want,
                           const char* what)
{
    if (n != want) {
        return say(in, fmi2Error, "%s: %zu %s given; this FMU has %zu; nothing was done", fn, n,
                   what, want);
    }
    if (n > 0 && p == NULL) {
        return say(in, fmi2Error, "%s: NULL array for %zu %s; nothing was done", fn, n, what);
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time)
{
    Inst* in = me_enter(c, "fmi2SetTime", ME_EVENT | ME_CT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return fmi2OK;      /* the start time is fmi2SetupExperiment's */
    }
    if (!(fabs(time) <= TIME_BOUND)) {
        return say(in, fmi2Error, "fmi2SetTime: t = %.17g; expected a finite time with |t| <= "
                   "%g s; nothing was changed", time, TIME_BOUND);
    }
    if (mbe_me_set_time(in->engine, time, in->err, sizeof in->err) != MBE_OK) {
        return say(in, fmi2Error, "fmi2SetTime: %s", in->err);
    }
    in->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{
    Inst* in = me_enter(c, "fmi2SetContinuousStates", ME_EVENT | ME_CT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return say(in, fmi2Error, "fmi2SetContinuousStates: not allowed in initialization mode "
                   "(the initial state follows from the parameters and the loops' assembly)");
    }
    if (me_array(in, "fmi2SetContinuousStates", x, nx, NX, "continuous states") != fmi2OK) {
        return fmi2Error;
    }
    if (mbe_me_set_states(in->engine, FMU_N_IND, FMU_IND, x, in->err, sizeof in->err)
        != MBE_OK) {
        return say(in, fmi2Error, "fmi2SetContinuousStates: %s: %s; the state was not changed",
                   FMU_MODEL_NAME, in->err);
    }
    in->y_valid = 0;
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{
    Inst* in = me_enter(c, "fmi2GetContinuousStates", ME_EVENT | ME_CT | ME_TERMINATED, 1);
    if (!in) {
        return fmi2Error;
    }
    if (me_array(in, "fmi2GetContinuousStates", x, nx, NX, "continuous states") != fmi2OK) {
        return fmi2Error;
    }
    mbe_me_get_states(in->engine, FMU_N_IND, FMU_IND, x);
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[],
                                                    size_t nx)
{
    Inst* in = me_enter(c, "fmi2GetNominalsOfContinuousStates",
                        ME_EVENT | ME_CT | ME_TERMINATED, 1);
    if (!in) {
        return fmi2Error;
    }
    if (me_array(in, "fmi2GetNominalsOfContinuousStates", nominal, nx, NX, "continuous states")
        != fmi2OK) {
        return fmi2Error;
    }
    for (size_t k = 0; k < nx; ++k) {
        nominal[k] = 1.0;
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real xdot[], size_t nx)
{
    Inst* in = me_enter(c, "fmi2GetDerivatives", ME_EVENT | ME_CT | ME_TERMINATED, 1);
    if (!in) {
        return fmi2Error;
    }
    if (me_array(in, "fmi2GetDerivatives", xdot, nx, NX, "derivatives") != fmi2OK) {
        return fmi2Error;
    }
    if (nx > 0 && mbe_me_derivatives(in->engine, in->u, FMU_N_IND, FMU_IND, xdot, in->err,
                                     sizeof in->err) != MBE_OK) {
        return say(in, fmi2Error, "fmi2GetDerivatives: %s: %s", FMU_MODEL_NAME, in->err);
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t ni)
{
    Inst* in = me_enter(c, "fmi2GetEventIndicators", ME_EVENT | ME_CT | ME_TERMINATED, 1);
    if (!in) {
        return fmi2Error;
    }
    if (me_array(in, "fmi2GetEventIndicators", z, ni, FMU_N_EVENT_INDICATORS,
                 "event indicators") != fmi2OK) {
        return fmi2Error;
    }
    if (ni > 0 && mbe_me_indicators(in->engine, in->u, FMU_N_IND, FMU_IND, z, in->err,
                                    sizeof in->err) != MBE_OK) {
        return say(in, fmi2Error, "fmi2GetEventIndicators: %s: %s", FMU_MODEL_NAME, in->err);
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c)
{
    Inst* in = me_enter(c, "fmi2EnterEventMode", ME_EVENT | ME_CT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return say(in, fmi2Error, "fmi2EnterEventMode: not allowed in initialization mode "
                   "(fmi2ExitInitializationMode enters event mode)");
    }
    in->me_mode = ME_EVENT;
    return fmi2OK;
}

/* One event iteration (mbe_me_event): impacts, persistent contacts' changes and releases;
 * the states changed after any of them. The partition's condition below its threshold is
 * logged once as a warning. */
static fmi2Status me_update(Inst* in, const char* fn, int* changed)
{
    int singular = 0;
    *changed = 0;
    if (mbe_me_event(in->engine, in->u, FMU_N_IND, FMU_IND, changed, &singular, in->err,
                     sizeof in->err) != MBE_OK) {
        return say(in, fmi2Error, "%s: %s: %s; the state was not changed", fn, FMU_MODEL_NAME,
                   in->err);
    }
    if (*changed) {
        in->y_valid = 0;
    }
    if (singular && !in->me_warned) {
        in->me_warned = 1;
        return say(in, fmi2Warning, "%s: %s: at t = %.9g s the independent coordinates chosen "
                   "at initialisation approach a singular partition (the event indicator of the "
                   "partition crossed zero): the dependent coordinates of the closed loops, or "
                   "the Euler parameter that the other three fix, are ill-determined here; "
                   "model exchange loses accuracy and stops where they cannot be found; the "
                   "co-simulation interface keeps every coordinate and projects", fn, FMU_MODEL_NAME,
                   mbe_time(in->engine));
    }
    if (!singular) {
        in->me_warned = 0;
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* info)
{
    Inst* in = me_enter(c, "fmi2NewDiscreteStates", ME_EVENT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return say(in, fmi2Error, "fmi2NewDiscreteStates: not allowed in initialization mode");
    }
    if (info == NULL) {
        return say(in, fmi2Error, "fmi2NewDiscreteStates: NULL fmi2EventInfo pointer; nothing "
                   "was done");
    }
    int changed = 0;
    fmi2Status st = me_update(in, "fmi2NewDiscreteStates", &changed);
    if (st > fmi2Warning) {
        return st;
    }
    info->newDiscreteStatesNeeded = changed != 0;      /* iterate until nothing changes */
    info->terminateSimulation = 0;
    info->nominalsOfContinuousStatesChanged = 0;
    info->valuesOfContinuousStatesChanged = changed != 0;
    info->nextEventTimeDefined = 0;
    info->nextEventTime = 0.0;
    return st;
}

EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c)
{
    Inst* in = me_enter(c, "fmi2EnterContinuousTimeMode", ME_EVENT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return say(in, fmi2Error, "fmi2EnterContinuousTimeMode: not allowed in initialization "
                   "mode");
    }
    in->me_mode = ME_CT;
    return fmi2OK;
}

EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c,
                                              fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                              fmi2Boolean* enterEventMode,
                                              fmi2Boolean* terminateSimulation)
{
    (void)noSetFMUStatePriorToCurrentPoint;
    Inst* in = me_enter(c, "fmi2CompletedIntegratorStep", ME_CT, 0);
    if (!in) {
        return fmi2Error;
    }
    if (in->mode == INIT_MODE) {
        return say(in, fmi2Error, "fmi2CompletedIntegratorStep: not allowed in initialization "
                   "mode");
    }
    if (enterEventMode == NULL || terminateSimulation == NULL) {
        return say(in, fmi2Error, "fmi2CompletedIntegratorStep: NULL pointer for an out "
                   "argument; nothing was done");
    }
    *enterEventMode = 0;         /* no step events: the events are the indicators' */
    *terminateSimulation = 0;
    return fmi2OK;
}
