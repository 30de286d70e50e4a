/*
 * fmu_mb's Zeno guard on the rate of events, shared by the co-simulation event loop
 * (event_loop.h) and the model-exchange event iteration (engine_me.h): more than
 * EV_ZENO_COUNT events of one contact or frictional joint within EV_ZENO_SPAN [s] of
 * simulated time (max(1, |t|) EV_ZENO_SPAN at large t) are Zeno behaviour
 * (fmu_mb.dynamics.integrate.ZENO_COUNT, ZENO_SPAN). Each contact or joint has a window: the
 * time of its first event (*zt) and its events since (*zn, 0: no window yet). The windows
 * are state of the engine between calls (communication steps, event iterations): a window
 * spans as many calls as its EV_ZENO_SPAN covers.
 */
#ifndef FMU_MB_ZENO_H
#define FMU_MB_ZENO_H

#include <math.h>

#define EV_ZENO_COUNT 10000
#define EV_ZENO_SPAN 1e-3

/* one event at time te in the window (*zt, *zn), which restarts at te when it is empty or
 * began more than EV_ZENO_SPAN before te: 1 when the window then holds more than
 * EV_ZENO_COUNT events, else 0 */
static inline int zeno_rate(double *zt, int *zn, double te)
{
    if (!*zn || te - *zt > EV_ZENO_SPAN * fmax(1.0, fabs(te))) {
        *zt = te;
        *zn = 0;
    }
    return ++*zn > EV_ZENO_COUNT;
}

#endif
