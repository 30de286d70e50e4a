/*
 * fmu_mb's work budget of one kernel call, shared by the planar kernel (kernel.c) and the
 * spatial kernel (spatial_kernel.c): each right-hand side and each Newton iteration of the
 * projection charges `unit`, and a kernel may charge its linear solves by their operation
 * count on top (work_ops); past `budget` (> 0) the charge fails with ERR_WORK, which the
 * integrators pass up like any other failure of the right-hand side. Counted, not timed, so
 * that results stay deterministic. The engine (engine.c) sets it before every step (its
 * MBE_WORK_BUDGET) and clears it after; 0: no budget (the in-process kernels of kernel.py).
 * The includer defines OK and ERR_WORK before it.
 */
#ifndef FMU_MB_WORK_H
#define FMU_MB_WORK_H

#include "unused.h"

typedef struct {
    double budget, unit, spent, extra;   /* spent: unit per charge; extra: work_ops's */
} Work;

/* work units per floating-point operation of a linear solve charged by work_ops (a unit is
 * about 1 us of a 2020s x86-64 core; the eigen-decomposition of dense.h runs at about 0.2 ns
 * per operation there: 1.4 ms at m = 160, so 1.5x that) */
#define WORK_PER_OP 3e-4

/* one unit of work against the budget: OK, or ERR_WORK when it is used up */
static int work_charge(Work *w)
{
    if (w->budget > 0.0 && (w->spent += w->unit) + w->extra > w->budget)
        return ERR_WORK;
    return OK;
}

/* ops floating-point operations (a solve's estimate of what it did, dense.h) against the
 * budget: OK, or ERR_WORK when it is used up */
MB_MAYBE_UNUSED static int work_ops(Work *w, double ops)
{
    if (w->budget > 0.0 && w->spent + (w->extra += ops * WORK_PER_OP) > w->budget)
        return ERR_WORK;
    return OK;
}

/* the budget of the calls that follow (0: none), the spent work reset */
static void work_set(Work *w, double budget, double unit)
{
    w->budget = budget;
    w->unit = unit;
    w->spent = w->extra = 0.0;
}

#endif
