/*
 * fmu_mb engine: the C API of the compiled multibody engine. One library, two hosts:
 *   - in process, fmu_mb/engine/engine.py loads it with ctypes (simulate()/advance() with the
 *     compiled formulation, and the pythonfmu FMU's step);
 *   - the native FMU (fmu_mb/fmi/native/fmi2_native.c) links it behind the FMI 2.0 C API.
 * Both run the same C code on the same model data, so their numbers agree by construction.
 *
 * A model's data is a blob made at build time by fmu_mb.engine.data (Python) from a Model:
 * what the kernels need (kernel.c, spatial_kernel.c), the outputs' recipes, the parameter
 * table, the compiled parameter program (fmu_mb/engine/native/params.h: model parameters ->
 * data) and the initial state's recipe. The engine copies what it keeps; it holds no global
 * mutable state (the Runge-Kutta tableaus are compiled-in constants), so instances may live
 * in different threads and a host may dlclose/dlopen the library between instantiations.
 *
 * Conventions (README "Conventions"): SI units; q, qd the engine's coordinates and rates (tree
 * joint coordinates; Euler parameters for free spatial bodies), u the inputs h(t) of the
 * actuator elements in model.inputs order, held over a communication step; outputs in the
 * order of fmu_mb.dynamics.outputs.output_spec(model).
 *
 * Every function that can fail returns an MbeStatus and writes a one-line message (naming what
 * was wrong and what was expected) into err[0 .. errlen-1] (NUL-terminated; err may be NULL).
 * A call that fails changes nothing: the state from before the call stays intact.
 */
#ifndef FMU_MB_ENGINE_H
#define FMU_MB_ENGINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MBE_DATA_MAGIC 0x424d4d46u       /* "FMMB" little-endian: first 4 bytes of a blob */
#define MBE_DATA_VERSION 3       /* 2: contacts; 3: spatial contacts, drives and cylinders */

typedef enum {
    MBE_OK = 0,
    MBE_DISCARD = 1,   /* the step could not be completed; state kept; may retry smaller */
    MBE_ERROR = 2      /* invalid argument, parameter, setting or state; nothing changed */
} MbeStatus;

/* Solver settings (the FMU's solver.* parameters). */
typedef struct {
    int method;            /* 0 dopri5, 1 dop853, 2 rk4 (the explicit methods in C)        */
    double rtol, atol;     /* adaptive methods                                             */
    double step;           /* rk4's step [s]                                                */
    double max_step;       /* largest step of the adaptive methods [s] (inf: none)         */
    double max_steps;      /* most integrator steps per do_step (0: the engine's own cap)  */
    int stabilization;     /* 0 none, 1 projection, 2 baumgarte (loop rows)                */
    double alpha, beta;    /* Baumgarte [1/s]                                              */
    double proj_tol;       /* projection tolerance                                         */
    /* the contact event loop's settings (models with contacts; event_loop.h); 0: the model
     * data's own value (A_DCSET, fmu_mb.engine.data.EVENT_SETTINGS), so a host that zeroes
     * the struct runs the model's defaults. Otherwise finite numbers > 0. */
    double contact_tol;       /* a gap at or below it counts as closed at an impact [m or rad] */
    double contact_velocity;  /* a rebound below it becomes persistent [m/s or rad/s]          */
    double event_tol;         /* Brent's time tolerance of the event location [s]              */
} MbeSettings;

typedef struct MbEngine MbEngine;

/* A new engine for the model data (copied). NULL when the data are not a valid blob of this
 * version or memory runs out (message in err). Parameters start at their defaults. */
MbEngine *mbe_create(const unsigned char *data, size_t size, char *err, size_t errlen);
void mbe_free(MbEngine *e);

int mbe_n_parameters(const MbEngine *e);   /* model parameters (the data's parameter table) */
int mbe_n_inputs(const MbEngine *e);
int mbe_n_outputs(const MbEngine *e);
int mbe_n_q(const MbEngine *e);            /* coordinates; rates have the same count        */
/* The model data the engine runs on: the blob's doubles with the parameters applied (the
 * program's slots, then the projection metric derived from the masses), *n of them. */
const double *mbe_model_doubles(const MbEngine *e, int *n);

/* Model parameters (values in the parameter table's order). Checked (finite, min/max, the
 * guards of the parameter program) and applied (model data re-derived, kernels remade) here;
 * the state is not touched until mbe_initialize. */
MbeStatus mbe_set_parameters(MbEngine *e, const double *p, char *err, size_t errlen);
MbeStatus mbe_set_settings(MbEngine *e, const MbeSettings *s, char *err, size_t errlen);

/* The initial state at t0 from the parameters (loop assembly by Newton from the model file's
 * initial guess, velocity projection), as fmu_mb.dynamics.simulate.initial_state does it.
 * The assembly runs at the model's own start time, the data's t0, where the drives' laws are
 * evaluated, as initial_state does; the state's time is then t0, as the Python FMU sets its
 * start time. */
MbeStatus mbe_initialize(MbEngine *e, double t0, char *err, size_t errlen);
/* The last mbe_initialize's warning, "" when none: a planar body placed at its declared pose
 * that the assembly moved far from it (the loops closed on another assembly branch). The
 * string belongs to the engine and holds until the next mbe_initialize. */
const char *mbe_warning(const MbEngine *e);
/* The bytes of the instance's workspaces that are allocated on first use (the paths that
 * need dense rows or a Gram matrix: the assembly's fine retries, the envelope solves, the
 * linearization, the model-exchange closure): which = 0 the dense rows' Jacobian D, 1 the
 * fine cut's dense rows A, 2 the Gram matrix S, 3 its factor or eigenvectors V, -1 their
 * sum; 0 for a NULL instance or another which. */
size_t mbe_workspace_bytes(const MbEngine *e, int which);

/* One communication step from the current time t to t + h with the inputs u held. The work is
 * bounded whatever the settings say (settings.max_steps, and a hard cap of the engine's own).
 * MBE_DISCARD: the step failed (lock-up, non-finite state, budget used up, |q|,|qd| > 1e12);
 * the state is that from before the call. */
MbeStatus mbe_do_step(MbEngine *e, double h, const double *u, char *err, size_t errlen);

/* mbe_do_step that returns early at the first impact inside (t, t + h] (FMI 3.0's early
 * return): *impact = 1 and the state (time mbe_time) is that just after the impact, else
 * *impact = 0 and the step went to t + h as mbe_do_step. Models without contacts never
 * return early. A later step from there takes the integrator steps mbe_do_step takes after
 * that impact, so the impact times are those of plain mbe_do_step calls. */
MbeStatus mbe_do_step_to_event(MbEngine *e, double h, const double *u, int *impact, char *err,
                               size_t errlen);
int mbe_n_contacts(const MbEngine *e);

double mbe_time(const MbEngine *e);

/* Every output (output_spec order) at the current state with inputs u; y has mbe_n_outputs
 * entries. Integer and boolean outputs are written as doubles. */
MbeStatus mbe_outputs(MbEngine *e, const double *u, double *y, char *err, size_t errlen);

/* The outputs by group (for the native FMU's getReal), so that a
 * master reading positions does not pay for the reactions. mbe_output_group(e, i) is the
 * group of output i (one bit); mbe_outputs_groups writes the outputs of the groups in
 * `groups` (an OR of MBE_GROUP_*) into their entries of y and leaves the other entries
 * untouched; mbe_outputs is mbe_outputs_groups(..., MBE_GROUP_ALL, ...). Costs measured in
 * process: double wishbone 23 us for all, 7 us for MBE_GROUP_MOTION. */
#define MBE_GROUP_BODIES 1      /* the bodies' positions, orientations, velocities          */
#define MBE_GROUP_REACTIONS 2   /* reactions, link tensions, drive efforts (multipliers)    */
#define MBE_GROUP_RESIDUALS 4   /* constraint.residual, constraint.velocity_residual        */
#define MBE_GROUP_COORDS 8      /* joint coordinates and rates                              */
#define MBE_GROUP_ELEMENTS 16   /* force elements' values                                   */
#define MBE_GROUP_MARKERS 32    /* points' positions and velocities                         */
#define MBE_GROUP_ENERGY 64     /* energy.kinetic, energy.potential, energy.total           */
#define MBE_GROUP_CONTACTS 128  /* contacts' gaps and impact records (their forces: reactions) */
#define MBE_GROUP_MOTION 249    /* all but the reactions and the residuals                  */
#define MBE_GROUP_ALL 255
int mbe_output_group(const MbEngine *e, int i);
MbeStatus mbe_outputs_groups(MbEngine *e, const double *u, int groups, double *y, char *err,
                             size_t errlen);

/* The whole solver state as doubles (t, q, qd, the integrator's next step size, then per
 * contact its records: impacts, time of the last impact, impulse of the last impact, energy
 * lost in its impacts, active 0/1), mbe_state_size entries. mbe_set_state checks every value
 * (finite, in range, consistent with the model) and refuses the rest with MBE_ERROR, changing
 * nothing. */
size_t mbe_state_size(const MbEngine *e);
void mbe_get_state(const MbEngine *e, double *s);
MbeStatus mbe_set_state(MbEngine *e, const double *s, char *err, size_t errlen);

/* The native FMU's linearization (planar and spatial models; spatial rows also hold the
 * tree's own Euler-parameter normalisations in q, so three of four Euler parameters can be
 * states). The
 * state of a linear model is x = (q_i, qd_i) of the f
 * independent tree coordinates ind[0..f-1] (fmu_mb.dynamics.linearize: coordinate
 * partitioning; the dependent coordinates follow from closing every model row with q_i held,
 * their rates from the velocity rows).
 * mbe_state_derivatives: xdot (2 f) = (qd_i, qdd_i) at the current state with inputs u.
 * mbe_directional_derivative: dv[k] = sum_j d unknown[k] / d known[j] * seed[j] at the
 * current state and inputs u (Ridders' extrapolation of central differences along the seed,
 * the loops closed again at every evaluation), where a known is a state 0..2f-1 (x) or an
 * input 2f..2f+ni-1, and an unknown a state derivative 0..2f-1 (xdot) or an output
 * 2f..2f+nout-1 (output_spec order). The state is not changed. */
MbeStatus mbe_state_derivatives(MbEngine *e, const double *u, int f, const int *ind,
                                double *xdot, char *err, size_t errlen);
MbeStatus mbe_directional_derivative(MbEngine *e, const double *u, int f, const int *ind,
                                     int nknown, const int *known, const double *seed,
                                     int nunk, const int *unknown, double *dv, char *err,
                                     size_t errlen);

/* Model exchange (engine_me.h): a host integrates x = (q_i, qd_i) of the independent
 * coordinates ind[0..f-1] (the same partition as mbe_state_derivatives) with its own solver.
 * mbe_me_set_time sets the time; mbe_me_set_states closes the loops for x (Newton from the
 * last solution; MBE_ERROR, nothing changed, when they cannot be closed or the partition is
 * singular there); mbe_me_get_states reads x; mbe_me_derivatives: xdot (2 f) at the state,
 * the persistent contacts' rows closed (with friction: the phase's sticking rows and sliding
 * forces); mbe_me_indicators: z (mbe_me_n_indicators: one per contact, its gap in flight or
 * its force when persistent, with friction then one per contact, mu f_n - |f_t| sticking,
 * the slip velocity along the slip direction slipping, then the partition's condition
 * minus 1e-3 when there are dependent coordinates, then the charts' smallest |l_d| minus 0.5
 * when three of four Euler parameters are states: they are then chart coordinates of a
 * local quaternion, engine_me.h); mbe_me_event: one event iteration (impacts, releases and
 * stick/slip transitions of the co-simulation event loop, its Zeno guard, the charts'
 * re-centring): *changed = 1 when
 * the state, the charts or the active contacts changed, *singular = 1 when the partition's
 * indicator is negative or zero to round-off (below 1e-9: an event at its root). */
MbeStatus mbe_me_set_time(MbEngine *e, double t, char *err, size_t errlen);
void mbe_me_get_states(MbEngine *e, int f, const int *ind, double *x);
MbeStatus mbe_me_set_states(MbEngine *e, int f, const int *ind, const double *x, char *err,
                            size_t errlen);
MbeStatus mbe_me_derivatives(MbEngine *e, const double *u, int f, const int *ind, double *xdot,
                             char *err, size_t errlen);
int mbe_me_n_indicators(MbEngine *e, int f, const int *ind, char *err, size_t errlen);
MbeStatus mbe_me_indicators(MbEngine *e, const double *u, int f, const int *ind, double *z,
                            char *err, size_t errlen);
MbeStatus mbe_me_event(MbEngine *e, const double *u, int f, const int *ind, int *changed,
                       int *singular, char *err, size_t errlen);
/* The charts of the Euler parameters that the states hold (engine_me.h): mbe_me_chart_size
 * doubles, part of an FMU state (mbe_me_set_chart refuses values that are no chart);
 * mbe_me_reset: not set (the identity from the next call: at a new start). */
size_t mbe_me_chart_size(MbEngine *e, int f, const int *ind);
void mbe_me_get_chart(MbEngine *e, int f, const int *ind, double *s);
MbeStatus mbe_me_set_chart(MbEngine *e, int f, const int *ind, const double *s, char *err,
                           size_t errlen);
void mbe_me_reset(MbEngine *e);
/* mbe_directional_derivative with respect to the model-exchange states (the charts'
 * coordinates where they hold Euler parameters) */
MbeStatus mbe_me_directional_derivative(MbEngine *e, const double *u, int f, const int *ind,
                                        int nknown, const int *known, const double *seed,
                                        int nunk, const int *unknown, double *dv, char *err,
                                        size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
