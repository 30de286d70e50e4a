"""Fixed-step implicit integrators of the index-3 DAE (seed 004's solvers).

    M(q) qdd + D' lam = f(q, qd, t, u),      Phi(q, t) = 0          (formulations.dae)

- "generalized_alpha": Chung and Hulbert's generalized-alpha method in the form Arnold and
  Bruls gave it for constrained mechanical systems. An algorithmic acceleration a is carried
  from step to step besides q, qd = v and the true acceleration qdd:

      (1 - alpha_m) a1 + alpha_m a0 = (1 - alpha_f) qdd1 + alpha_f qdd0
      q1 = q0 + h v0 + h^2 (1/2 - beta) a0 + h^2 beta a1
      v1 = v0 + h (1 - gamma) a0 + h gamma a1
      M(q1) qdd1 + D(q1)' lam1 = f(q1, v1, t1),     Phi(q1, t1) = 0

  with alpha_m = (2 rho_inf - 1) / (rho_inf + 1), alpha_f = rho_inf / (rho_inf + 1),
  gamma = 1/2 + alpha_f - alpha_m, beta = (gamma + 1/2)^2 / 4: second order, and the
  spectral radius of the amplification matrix tends to rho_inf in [0, 1] as h / T -> inf
  (rho_inf = 1: no numerical dissipation; 0: the strongest). Default 0.9, Exudyn's.
- "trapezoidal": the same scheme with alpha_m = alpha_f = 0, beta = 1/4, gamma = 1/2
  (Newmark's average acceleration = the implicit trapezoidal rule, a1 = qdd1, no dissipation)
  on the index-2 form: the velocity constraint D(q1) v1 + Phi_t = 0 replaces Phi = 0
  (Exudyn's "TrapezoidalIndex2"). Positions then drift slowly; the default projection
  removes that after each step.

`Settings.dae_form` picks the constraint rows: "index3" (Phi = 0, default of
generalized_alpha), "index2" (D v + Phi_t = 0, default of trapezoidal), or "ggl" (both, the
stabilised index-2 form of Gear, Gupta and Leimkuhler: q1 gets a correction D(q0)' eta with
an extra multiplier eta, so that positions and velocities both satisfy their constraints).

Newton on the unknowns (qdd1, lam1[, eta]) with the constraint rows scaled by 1 / (beta' h^2)
(index 3) or 1 / (gamma' h) (index 2), beta' = beta (1 - alpha_f) / (1 - alpha_m), gamma' the
same with gamma, so that the iteration matrix

    [ M + beta' h^2 K + gamma' h C    D' ]       K = d(M qdd + D' lam - f)/dq
    [ D                               0  ]       C = -df/dqd

tends to the regular KKT matrix [M D'; D 0] as h -> 0 instead of becoming singular (the
scaling of Bottasso, Bauchau and Cardona). M and D come from the formulation; the column j
of beta' h^2 K + gamma' h C is one forward difference of the force residual along the Newton
update itself (q by beta' h^2 d, qd by gamma' h d for a change d of qdd_j), n evaluations
per matrix (fmu_mb has no analytic element stiffness). The
matrix is factorised once and reused over the following steps (simplified Newton) until a step
needs more than 4 iterations or an iteration fails, and rebuilt at the current iterate as
soon as the contraction rate exceeds 0.3 (full Newton where the step is strongly nonlinear); the iteration starts from qdd and lam extrapolated linearly from the last two steps; each advance() call starts
with a fresh matrix so that a restored state continues bit-identically.

The carried (a, qdd, lam) live in State.extra["implicit"], so FMU get/set state keeps them.
"""
import math
import warnings

import numpy as np

from ..errors import DriftError, InputError, IntegrationError
from ..linalg import sla   # scipy.linalg, imported on first use (start-up without scipy)
from .state import State
from .work import charge

IMPLICIT_METHODS = ("generalized_alpha", "trapezoidal")
DAE_FORMS = ("auto", "index3", "index2", "ggl")
MAX_ITER = 20          # Newton iterations per attempt
MAX_BUILDS = 4         # matrices per attempt before a diverging iteration gives up
REFRESH_RATE = 0.3     # contraction rate above which the matrix is rebuilt for the next step
REFRESH_ITER = 4       # iterations of a step above which the matrix is rebuilt for the next
RCOND_MIN = 1e-14      # reciprocal condition below which the LU is replaced by an SVD
STALL_ACCEPT = 1e-7    # relative change of v below which a stalled iteration is accepted


def coefficients(method, rho_inf):
    """(alpha_m, alpha_f, beta, gamma) of `method` (see the module docstring)."""
    if method == "trapezoidal":
        return 0.0, 0.0, 0.25, 0.5
    r = float(rho_inf)
    alpha_m = (2.0 * r - 1.0) / (r + 1.0)
    alpha_f = r / (r + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    return alpha_m, alpha_f, 0.25 * (gamma + 0.5) ** 2, gamma


def dae_form(settings):
    """The constraint rows the method uses: index3, index2 or ggl."""
    if settings.dae_form != "auto":
        return settings.dae_form
    return "index2" if settings.method == "trapezoidal" else "index3"


def consistent_accelerations(terms):
    """qdd, lam of [M D'; D 0] [qdd; lam] = [f; -conv] (minimum norm if singular)."""
    n, m = terms.f.shape[0], terms.phi.shape[0]
    K = np.zeros((n + m, n + m))
    K[:n, :n] = terms.mass_matrix()
    K[:n, n:], K[n:, :n] = terms.D.T, terms.D
    rhs = np.concatenate([terms.f, -terms.conv])
    sol = _Factor(K).solve(rhs)
    return sol[:n], sol[n:]


class _Factor:
    """LU of the iteration matrix; a truncated SVD (minimum-norm solutions) when the matrix
    is singular or nearly so (redundant rows, the collinear poses of a four-bar)."""

    def __init__(self, K):
        self.lu = self.svd = None
        if not np.all(np.isfinite(K)):
            raise IntegrationError("the Newton iteration matrix holds NaN or infinite entries")
        if K.shape[0] == 0:
            self.lu = None
            self.svd = (np.zeros((0, 0)), np.zeros(0), np.zeros((0, 0)))
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                lu = sla.lu_factor(K, check_finite=False)
            anorm = np.abs(K).sum(axis=0).max()
            rcond, info = sla.lapack.dgecon(lu[0], anorm, norm="1")
            if info == 0 and rcond > RCOND_MIN:
                self.lu = lu
                return
        except (sla.LinAlgWarning, np.linalg.LinAlgError, ValueError, RuntimeWarning):
            pass
        U, s, Vt = np.linalg.svd(K)
        keep = s > 1e-12 * max(s[0], 1e-300)
        self.svd = (U[:, keep], s[keep], Vt[keep])

    def solve(self, r):
        if self.lu is not None:
            return sla.lu_solve(self.lu, r, check_finite=False)
        U, s, Vt = self.svd
        return Vt.T @ ((U.T @ r) / s)


def _least_mass_change(T, r):
    """dq of least M-norm with D dq = r (least squares if r is not in the range of D)."""
    n, m = T.f.shape[0], T.phi.shape[0]
    if m == 0:
        return np.zeros(n)
    K = np.zeros((n + m, n + m))
    K[:n, :n] = T.mass_matrix()
    K[:n, n:], K[n:, :n] = T.D.T, T.D
    return _Factor(K).solve(np.concatenate([np.zeros(n), r]))[:n]


def _add(model, q, dq):
    return q + dq


class _Integrator:
    """One advance() call of generalized_alpha / trapezoidal: the step, Newton, the matrix."""

    def __init__(self, model, form, settings, uvec, h):
        self.model, self.form, self.settings, self.u, self.h = model, form, settings, uvec, h
        self.dae = form.dae
        self.inc = getattr(form, "increment", None) or _add
        self.am, self.af, self.beta, self.gamma = coefficients(settings.method,
                                                               settings.rho_inf)
        self.bp = self.beta * (1.0 - self.af) / (1.0 - self.am)
        self.gp = self.gamma * (1.0 - self.af) / (1.0 - self.am)
        self.level = dae_form(settings)
        self.factor = None
        self.last = None            # DaeTerms of the last Newton iterate
        self.stats = {"steps": 0, "iterations": 0, "matrices": 0, "evaluations": 0}

    # ------------------------------------------------------------------ one step
    def step(self, t0, q0, v0, a0, qdd0, lam0, pred):
        """(q1, v1, a1, qdd1, lam1) at t0 + h from the predictor pred = (qdd, lam); raises
        IntegrationError when Newton fails."""
        h = self.h
        n, m = q0.shape[0], lam0.shape[0]
        t1 = t0 + h
        base = h * v0 + h * h * (0.5 - self.beta) * a0
        vbase = v0 + h * (1.0 - self.gamma) * a0
        Dn = None
        if self.level == "ggl":
            Dn = self._terms(q0, v0, t0).D
        ctx = (t1, q0, base, vbase, a0, qdd0, Dn, n, m)
        z0 = np.concatenate(list(pred) + ([np.zeros(m)] if Dn is not None else []))
        for attempt in range(2):
            fresh = self.factor is None
            z = self._newton(z0, ctx)
            if z is not None:
                break
            self.factor = None
            if fresh or attempt:
                raise IntegrationError(
                    f"model '{self.model.name}': the Newton iteration of "
                    f"{self.settings.method} did not converge in the step from "
                    f"t = {t0:.9g} s (h = {h:.3g} s); reduce the solver step or raise "
                    f"newton_tol")
        qdd1, lam1 = z[:n], z[n:n + m]
        q1, v1, a1 = self._kinematics(z, ctx)
        self.stats["steps"] += 1
        return q1, v1, a1, qdd1, lam1

    def _kinematics(self, z, ctx):
        t1, q0, base, vbase, a0, qdd0, Dn, n, m = ctx
        qdd = z[:n]
        a1 = (self.af * qdd0 + (1.0 - self.af) * qdd - self.am * a0) / (1.0 - self.am)
        dq = base + self.h * self.h * self.beta * a1
        if Dn is not None:
            dq = dq + self.bp * self.h * self.h * (Dn.T @ z[n + m:])
        return self.inc(self.model, q0, dq), vbase + self.h * self.gamma * a1, a1

    def _terms(self, q, v, t):
        charge()
        self.stats["evaluations"] += 1
        return self.dae(self.model, q, v, t, self.u)

    def _residual(self, z, ctx):
        t1, n, m = ctx[0], ctx[7], ctx[8]
        q1, v1, _ = self._kinematics(z, ctx)
        T = self._terms(q1, v1, t1)
        qdd, lam = z[:n], z[n:n + m]
        r1 = T.mass_times(qdd) + T.D.T @ lam - T.f
        pos = T.phi / (self.bp * self.h * self.h)
        vel = (T.D @ v1 + T.phi_t) / (self.gp * self.h)
        rows = {"index3": [pos], "index2": [vel], "ggl": [pos, vel]}[self.level]
        return np.concatenate([r1] + rows), T, q1, v1

    def _newton(self, z0, ctx):
        """Simplified Newton from z0, the matrix rebuilt at the current iterate when the
        contraction is slow (full Newton on strongly nonlinear steps); None when it diverges
        or does not converge."""
        n = ctx[7]
        z = z0.copy()
        prev = best = None
        builds = 0
        for it in range(MAX_ITER):
            r, T, q1, v1 = self._residual(z, ctx)
            self.last = T
            if not np.all(np.isfinite(r)):
                return None
            if self.factor is None:
                self._build(z, ctx, T, q1, v1)
                builds += 1
            dz = self.factor.solve(r)
            z = z - dz
            self.stats["iterations"] += 1
            dq = self.bp * self.h * self.h * np.abs(dz[:n]).max(initial=0.0)
            dv = self.gp * self.h * np.abs(dz[:n]).max(initial=0.0)
            if ctx[6] is not None:
                dq = max(dq, self.bp * self.h * self.h
                         * np.abs(ctx[6].T @ dz[n + ctx[8]:]).max(initial=0.0))
            qs, vs = 1.0 + np.abs(q1).max(initial=0.0), 1.0 + np.abs(v1).max(initial=0.0)
            err = max(dq / qs, dv / vs)
            if not math.isfinite(err):
                return None
            tol = self.settings.newton_tol
            if best is None or err < best[0]:
                best = (err, z)
            # converged: the increment itself is below tol, or (from the second iteration,
            # with the contraction rate theta of this step) the remaining error
            # theta / (1 - theta) |dz| is
            if err <= tol:
                return self._done(z, err / prev if prev else 0.0, it)
            if prev is not None:
                theta = err / prev
                if theta < 1.0 and theta / (1.0 - theta) * err <= tol:
                    return self._done(z, theta, it)
                if theta >= 1.0 and builds >= MAX_BUILDS:
                    return self._stalled(best)
                if theta > REFRESH_RATE:
                    self.factor = None          # rebuild at the next iterate
            prev = err
        return self._stalled(best)

    def _stalled(self, best):
        """The best iterate of an iteration that stalls at the roundoff floor (Phi is known to
        eps |q| and its rows are scaled by 1 / (beta' h^2): at small h near a singular pose
        that floor can exceed newton_tol), or None when it stalled far above it."""
        if best is not None and best[0] <= STALL_ACCEPT:
            self.factor = None
            return best[1]
        return None

    def project(self, q, v, t):
        """Drift control: q onto Phi(q, t) = 0 by Newton, then v onto D v = -Phi_t, each by
        the change of least M-norm (least kinetic energy; [M D'; D 0] [dq; mu] = [0; r]).
        Near a singular pose Newton may stall at a tiny residual, which is accepted. The
        index3 and ggl forms solve Phi = 0 already (to newton_tol): only v is projected, with
        D of the last Newton iterate (it differs from D(q) by newton_tol)."""
        if self.level != "index2" and self.last is not None:
            T = self.last
            return q, v - _least_mass_change(T, T.D @ v + T.phi_t)
        tol = self.settings.projection_tol
        scale = 1.0 + np.abs(q).max(initial=0.0)
        prev = math.inf
        for it in range(12):
            T = self._terms(q, v, t)
            err = np.abs(T.phi).max(initial=0.0)
            if err <= tol * scale:
                break
            stalled = it >= 2 and err > 0.5 * prev
            if (stalled or it == 11) and err <= 1e-10 * scale:
                break
            if stalled or it == 11 or not math.isfinite(err):
                raise DriftError(f"model '{self.model.name}': cannot restore the constraints "
                                 f"at t = {t:.9g} s (residual {err:.3g}); the mechanism may "
                                 f"have locked up or left its assembly branch")
            prev = err
            q = self.inc(self.model, q, -_least_mass_change(T, T.phi))
        return q, v - _least_mass_change(T, T.D @ v + T.phi_t)

    def _done(self, z, theta, it):
        if theta > REFRESH_RATE or it >= REFRESH_ITER:
            self.factor = None                  # slow: a new matrix for the next step
        return z

    def _build(self, z, ctx, T, q1, v1):
        """Iteration matrix at the iterate z (M, D analytic; K, C by forward differences)."""
        t1, n, m = ctx[0], ctx[7], ctx[8]
        h, bp, gp = self.h, self.bp, self.gp
        qdd, lam = z[:n], z[n:n + m]

        def force(Tk):
            return Tk.mass_times(qdd) + Tk.D.T @ lam - Tk.f

        g0 = force(T)
        G = T.mass_matrix().astype(float).copy()
        eps = math.sqrt(np.finfo(float).eps)
        for j in range(n):
            d = eps * (1.0 + abs(q1[j])) / (bp * h * h)   # a change of qdd_j moving q_j by
            e = np.zeros(n)                               # sqrt(eps) (1 + |q_j|)
            e[j] = d
            Tj = self._terms(self.inc(self.model, q1, bp * h * h * e), v1 + gp * h * e, t1)
            G[:, j] += (force(Tj) - g0) / d
        D = T.D
        ggl = self.level == "ggl"
        size = n + m + (m if ggl else 0)
        K = np.zeros((size, size))
        K[:n, :n] = G
        K[:n, n:n + m] = D.T
        K[n:n + m, :n] = D
        if ggl:
            Dn = ctx[6]
            K[n:n + m, n + m:] = D @ Dn.T
            K[n + m:, :n] = D
        self.factor = _Factor(K)
        self.stats["matrices"] += 1


def advance_implicit(model, state, t_end, uvec, settings, form, stats=None):
    """advance() for generalized_alpha and trapezoidal: equal steps of at most settings.step
    from state.t to t_end with inputs uvec held; drift control by settings.stabilization
    ("projection": q and qd projected onto Phi = 0, D qd = -Phi_t after every step by the
    changes of least M-norm, Integrator.project;
    "none": the method's own constraint rows only). Returns the new State; `stats` (a dict)
    receives the counts of steps, Newton iterations, matrices and DAE evaluations."""
    if getattr(form, "dae", None) is None:
        raise InputError(f"method '{settings.method}' needs the DAE terms of the formulation "
                         f"(formulations.dae); formulation '{form.name}' has none: use "
                         f"'newton_euler', 'tmt' or 'lagrange'")
    t0 = state.t
    nsteps = max(1, math.ceil((t_end - t0) / settings.step - 1e-9))
    h = (t_end - t0) / nsteps
    q, v = state.q.copy(), state.qd.copy()
    key = f"{settings.method}:{dae_form(settings)}"
    hist = state.extra.get("implicit")
    it = _Integrator(model, form, settings, uvec, h)
    if hist is not None and hist.get("key") == key and len(hist["a"]) == q.shape[0]:
        a, qdd, lam, qdd_old, lam_old = (np.asarray(hist[k], dtype=float) for k in (
            "a", "qdd", "lam", "qdd_old", "lam_old"))
        ratio = h / state.h if state.h > 0 else 0.0
    else:                       # consistent start: a = qdd of the index-1 equations
        qdd, lam = consistent_accelerations(it._terms(q, v, t0))
        a, qdd_old, lam_old, ratio = qdd.copy(), qdd, lam, 0.0
    project = settings.stabilization == "projection"
    n = q.shape[0]
    t = t0
    for k in range(nsteps):
        pred = (qdd + ratio * (qdd - qdd_old), lam + ratio * (lam - lam_old))
        qdd_old, lam_old = qdd, lam
        q, v, a, qdd, lam = it.step(t, q, v, a, qdd, lam, pred)
        ratio = 1.0
        t = t_end if k == nsteps - 1 else t0 + (k + 1) * h
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise IntegrationError(f"model '{model.name}': the state became non-finite at "
                                   f"t = {t:.9g} s (NaN or infinity); the step was rejected")
        if project:
            q, v = it.project(q, v, t)
    extra = dict(state.extra)
    extra["implicit"] = {"key": key, "a": a.tolist(), "qdd": qdd.tolist(),
                         "lam": lam.tolist(), "qdd_old": qdd_old.tolist(),
                         "lam_old": lam_old.tolist()}
    if stats is not None:
        for k, val in it.stats.items():
            stats[k] = stats.get(k, 0) + val
    return State(float(t_end), q, v, float(h), state.coords, extra)
