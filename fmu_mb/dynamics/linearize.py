"""Linear models for control design: static equilibrium (trim), A, B, C, D and modes at an
operating point (seed 001's M(q) q'' + b = Q written as x' = A x + B u, y = C x + D u).

Coordinates. The linear model lives in the minimal coordinates of the mechanism: the tree
joint coordinates q (fmu_mb.mechanics.tree.tree_coordinates) and, when cut joints, drives or
Euler-parameter normalisations add rows Phi(q, t) = 0, only the f = n - rank(Dq) independent
ones q_i chosen by coordinate partitioning (QR with column pivoting on Dq, the rule of the
`minimal` formulation). The state is x = (q_i, qd_i); the dependent coordinates follow from the
closure (Newton on Phi = 0 at every evaluation, so closed loops stay assembled) and
qd_d = -Dd^-1 (Di qd_i + Phi_t). The equations are those of the engine (tmt's Mbar, fbar; the
rows of formulations.minimal):

    qdd = R qdd_i + s,  R = [I; -Dd^-1 Di],  s = [0; -Dd^-1 conv_q]
    (R' Mbar R) qdd_i = R' (fbar - Mbar s)                         (the f minimal equations)

Derivatives. The engine's kernels work on real arrays (tree.transform, constraints.evaluate,
the element forces, and scipy's Cholesky and least squares, which conjugate), so complex-step
differentiation does not pass through them. The derivatives are therefore taken by central
differences of those equations with Richardson extrapolation (Ridders' method: a tableau of
central differences at steps h, h/c, h/c^2, ... extrapolated in h^2, keeping the entry of
smallest estimated error), typically exact to 1e-10 relative and with an error estimate
reported (`LinearModel.error`); `method="central"` is a single central difference with a small
step, the fallback and the cross-check (tests/test_linearize.py compares the two). The inputs
enter the equations affinely (actuator terms h are added to element forces), so B and D are
exact to round-off with either method; the first f rows of A are [0 I] by definition.

Contacts are left open in the linear model (gaps and forces appear as outputs); a drive makes
the model time-varying, and the linearisation holds at the operating point's time.
"""
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, SingularSystemError
from .state import State

#: outputs left out of the default y: not differentiable (max |.|) or counters
_NONSMOOTH = ("constraint.residual", "constraint.velocity_residual")


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class Mode:
    """One eigenvalue (a complex-conjugate pair counts once, the one with Im >= 0).

    eigenvalue : lambda [1/s]; frequency : undamped natural frequency |lambda| / (2 pi) [Hz];
    damped_frequency : Im(lambda) / (2 pi) [Hz]; damping : damping ratio -Re(lambda) / |lambda|
    (1 for a stable real pole, -1 for an unstable real pole, nan for lambda = 0); shape : the
    eigenvector over the coordinates q_i (the position part of x), scaled so that its largest
    entry is 1; dominant : the names of the coordinates whose |shape| exceeds 0.3, largest
    first."""

    eigenvalue: complex
    frequency: float
    damped_frequency: float
    damping: float
    shape: np.ndarray = field(compare=False)
    dominant: tuple = ()

    def describe(self):
        lam = self.eigenvalue
        z = "   nan" if np.isnan(self.damping) else f"{self.damping:+6.3f}"
        return (f"{self.frequency:12.6g} Hz  zeta {z}  lambda {lam.real:+.6g}"
                f"{lam.imag:+.6g}j  {', '.join(self.dominant)}")


@dataclass(frozen=True, eq=False)
class LinearModel:
    """x' = A x + B u, y = C x + D u around an operating point (deviations from it).

    x_names : the independent coordinates q_i, then their rates; u_names : model inputs;
    y_names : outputs (fmu_mb.dynamics.outputs names). state : the operating point (a
    joint-coordinate State of all tree coordinates, formulation tmt's); u0 : its inputs;
    x0 : the state there; y0 : the outputs there; xdot0 : x' there (zero at an
    equilibrium); independent,
    dependent : the partition of the tree coordinates; method : "ridders" or "central";
    error : the largest estimated absolute error of an entry of [A B; C D] (ridders), or nan.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    x_names: tuple
    u_names: tuple
    y_names: tuple
    state: State
    u0: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    xdot0: np.ndarray
    independent: tuple
    dependent: tuple
    method: str
    error: float

    @property
    def n_dof(self):
        return len(self.independent)

    def eigenvalues(self):
        """Eigenvalues of A [1/s], sorted by |lambda|, then by imaginary part."""
        lam = np.linalg.eigvals(self.A)
        return lam[np.lexsort((lam.imag, np.abs(lam)))]

    def modes(self, threshold=0.3):
        """The modes of A, slowest first (see Mode): one per real eigenvalue and one per
        complex-conjugate pair. threshold : |shape| above which a coordinate counts as
        dominant (the shape scaled to a largest entry of 1)."""
        lam, V = np.linalg.eig(self.A)
        f = self.n_dof
        order = np.lexsort((lam.imag, np.abs(lam)))
        scale = max(1.0, float(np.abs(lam).max(initial=0.0)))
        out = []
        for k in order:
            lk = lam[k]
            if lk.imag < -1e-12 * scale:
                continue                    # the conjugate of a mode already listed
            shape = V[:f, k] if f else V[:, k]
            if np.abs(shape).max(initial=0.0) < 1e-12:      # motion in the rates only
                shape = V[f:, k]
            big = np.abs(shape).max(initial=0.0)
            if big > 0:
                shape = shape / shape[np.argmax(np.abs(shape))]
            mag = abs(lk)
            zeta = float(-lk.real / mag) if mag > 1e-12 * scale else float("nan")
            dom = tuple(self.independent[i] for i in np.argsort(-np.abs(shape))
                        if abs(shape[i]) > threshold)
            out.append(Mode(complex(lk), float(mag / (2 * np.pi)),
                            float(abs(lk.imag) / (2 * np.pi)), zeta, shape, dom))
        return tuple(out)

    def output(self, name):
        """The row index of output `name` in y (InputError names the valid ones)."""
        try:
            return self.y_names.index(name)
        except ValueError:
            raise InputError(f"linear model: no output {name!r}; outputs are "
                             f"{list(self.y_names)}") from None

    def dc_gain(self):
        """Static gain -C A^-1 B + D (outputs per input at steady state); raises
        SingularSystemError when A is singular (a neutral coordinate, e.g. a free cart)."""
        try:
            return self.D - self.C @ np.linalg.solve(self.A, self.B)
        except np.linalg.LinAlgError:
            raise SingularSystemError("linear model: A is singular (a coordinate without "
                                      "stiffness), there is no static gain") from None

    def arrays(self):
        """{name: array} of the matrices, names and operating point (what save() writes)."""
        return {"A": self.A, "B": self.B, "C": self.C, "D": self.D,
                "x_names": np.array(self.x_names, dtype=str),
                "u_names": np.array(self.u_names, dtype=str),
                "y_names": np.array(self.y_names, dtype=str),
                "x0": self.x0,
                "u0": self.u0, "y0": self.y0, "t0": np.array(self.state.t),
                "eigenvalues": self.eigenvalues()}

    def save(self, path):
        """Write the matrices with their names: .npz (numpy) or .mat (MATLAB, scipy.io)."""
        path = str(path)
        data = self.arrays()
        if path.endswith((".mat", ".npz")):
            import os

            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if path.endswith(".mat"):
            from scipy.io import savemat

            savemat(path, {k: (np.array(list(v), dtype=object) if v.dtype.kind == "U" else v)
                           for k, v in data.items()}, oned_as="column")
        elif path.endswith(".npz"):
            np.savez(path, **data)
        else:
            raise InputError(f"linear model: save to a .npz or .mat file, received {path!r}")
        return path


@dataclass(frozen=True, eq=False)
class Equilibrium:
    """A static equilibrium (qd = 0, qdd = 0).

    state : joint-coordinate State (all tree coordinates, tmt's; rates zero) at which the
    model rests; inputs : {input name: value} holding it (the given ones and those solved
    for); u : the same as an array in model.inputs order; coordinates : {independent
    coordinate name: value}; residual : the largest generalised force left in the minimal
    equations, |R' (fbar - Mbar s)| at qd = 0 [N or N.m]; static_residual : the engine's
    statics in absolute coordinates, max |D' lam - f| of fmu_mb.inverse_dynamics at
    (x, xd = 0, xdd = 0) [N or N.m]; iterations : Newton iterations taken."""

    state: State
    inputs: dict
    u: np.ndarray
    coordinates: dict
    residual: float
    static_residual: float
    iterations: int


# ------------------------------------------------------------------ the minimal equations
class _Minimal:
    """The f minimal equations of `model` around the tree-coordinate pose (q0, qd0) at time
    t, with a fixed partition (ind, dep)."""

    def __init__(self, model, q0, qd0, t, ind, dep):
        from .formulations import tmt

        self.model, self.t = model, float(t)
        self.q0, self.qd0 = np.array(q0, float), np.array(qd0, float)
        self.ind, self.dep = np.asarray(ind, np.intp), np.asarray(dep, np.intp)
        self.names = tuple(tmt.coordinates(model))
        self.n, self.f = self.q0.shape[0], len(self.ind)

    def rows(self, q, qd):
        from .formulations import minimal

        return minimal.rows(self.model, q, qd, self.t)

    def full(self, qi, qdi):
        """(q, qd) of all tree coordinates from the independent ones: Newton on the closure
        for q_d (from the operating pose) until round-off, then the velocity rows."""
        q = self.q0.copy()
        q[self.ind] = qi
        qd = np.zeros(self.n)
        qd[self.ind] = qdi
        if len(self.dep) == 0:
            return q, qd
        zero = np.zeros(self.n)
        scale = 1.0 + np.abs(q).max()
        prev = np.inf
        for _ in range(40):
            phi, Dq, _, phi_t = self.rows(q, zero)
            err = np.abs(phi).max(initial=0.0)
            if err <= 1e-15 * scale or (err <= 1e-11 * scale and err >= 0.5 * prev):
                break                                   # converged to round-off
            prev = err
            q[self.dep] -= np.linalg.lstsq(Dq[:, self.dep], phi, rcond=None)[0]
            if not np.all(np.isfinite(q)):
                break
        else:
            err = np.inf
        if not err <= 1e-9 * scale:
            raise SingularSystemError(
                f"model '{self.model.name}': the closure cannot be solved for the dependent "
                f"coordinates {[self.names[i] for i in self.dep]} near the operating point "
                f"(residual {err:.3g}): a singular configuration, or a perturbation too large")
        phi, Dq, _, phi_t = self.rows(q, zero)
        qd[self.dep] = np.linalg.lstsq(Dq[:, self.dep], -(Dq[:, self.ind] @ qdi + phi_t),
                                       rcond=None)[0]
        return q, qd

    def generalised(self, q, qd, u):
        """(Mh, Qh): the minimal mass matrix R' Mbar R and force R' (fbar - Mbar s)."""
        from .formulations import tmt

        model, ind, dep, f = self.model, self.ind, self.dep, self.f
        Mbar, fbar, *_ = tmt.reduced_equations(model, q, qd, self.t, u)
        R = np.zeros((self.n, f))
        R[ind, np.arange(f)] = 1.0
        s = np.zeros(self.n)
        if len(dep):
            _, Dq, conv, _ = self.rows(q, qd)
            sol = np.linalg.lstsq(Dq[:, dep], np.column_stack([Dq[:, ind], -conv]),
                                  rcond=None)[0]
            R[dep] = -sol[:, :f]
            s[dep] = sol[:, f]
        return R.T @ Mbar @ R, R.T @ (fbar - Mbar @ s)

    def accelerations(self, q, qd, u):
        Mh, Qh = self.generalised(q, qd, u)
        if self.f == 0:
            return np.zeros(0)
        try:
            return np.linalg.solve(Mh, Qh)
        except np.linalg.LinAlgError:
            raise SingularSystemError(f"model '{self.model.name}': the minimal mass matrix "
                                      f"R' Mbar R is singular at the operating point") from None


def _equations(model, sys_, t, sel):
    """z = (q_i, qd_i, u) -> (qdd_i, the outputs `sel`) of the minimal equations sys_ (a
    _Minimal) at time t: what linearize differentiates."""
    from .outputs import Outputs

    f = sys_.f

    def fun(z):
        q, qd = sys_.full(z[:f], z[f:2 * f])
        u = z[2 * f:]
        qdd = sys_.accelerations(q, qd, u)
        y = Outputs(model, State(t, q, qd, 0.0, "joint"), u, "tmt").values()[sel] \
            if len(sel) else np.zeros(0)
        return np.concatenate([qdd, y])
    return fun


def _tree_equations(model, sys_, t, sel):
    """_equations of a model without dependent coordinates by the recursive formulation
    (the compiled kernel's accelerations and the engine's outputs: O(model size) per
    evaluation, where the tmt equations' T(q) and T' M T grow with its square), or None when
    the recursive formulation cannot run the model or orders its coordinates otherwise. The
    same equations up to round-off: what the spot check of model_structure evaluates."""
    from .formulations import recursive
    from .outputs import Outputs

    try:
        if len(sys_.dep) or model.contacts or not recursive.supports(model) or \
                tuple(recursive.coordinates(model)) != tuple(sys_.names):
            return None
    except Exception:       # noqa: BLE001 (no compiled kernel: the tmt equations serve)
        return None
    f = sys_.f

    def fun(z):
        q, qd = sys_.full(z[:f], z[f:2 * f])
        u = z[2 * f:]
        qdd = recursive.accelerations(model, q, qd, t, u).qdd[sys_.ind]
        y = Outputs(model, State(t, q, qd, 0.0, "joint"), u, "recursive").values()[sel] \
            if len(sel) else np.zeros(0)
        return np.concatenate([qdd, y])
    return fun


def operating_state(model, state=None):
    """The joint-coordinate State (all tree coordinates, tmt's) that `state` names: None (the
    model's initial state), a State, an Equilibrium, or a mapping {coordinate or rate name:
    value} applied to the initial state with the loops closed again (see linearize)."""
    if isinstance(state, Equilibrium):
        return state.state
    return _tmt_state(model, state)


def _tmt_state(model, state):
    """The operating point as a joint-coordinate State of tmt's tree coordinates."""
    from .formulations import tmt
    from ..mechanics import constraints
    from ..mechanics.tree import tree_map

    if state is None:
        return tmt.initial_state(model)
    names = tmt.coordinates(model)
    if isinstance(state, State):
        if state.coords == "joint":
            if state.q.shape != (len(names),):
                raise InputError(f"model '{model.name}': a joint-coordinate state needs "
                                 f"{len(names)} coordinates {list(names)}, received "
                                 f"{state.q.shape[0]}")
            st = state
        elif model.spatial:
            raise InputError(f"model '{model.name}': linearize a spatial model around a "
                             f"joint-coordinate State (formulation tmt, recursive or "
                             f"minimal), not an absolute one")
        else:
            tm = tree_map(model)
            q, qd, _, _ = constraints.joint_coordinates(model, state.q, state.qd)
            pos = {k: i for i, k in enumerate(model.compiled.coord_joints)}
            sel = [pos[k] for k in tm.joints]
            fr = [3 * b + c for b in tm.free for c in range(3)]
            st = State(state.t, np.concatenate([q[sel], state.q[fr]]),
                       np.concatenate([qd[sel], state.qd[fr]]), 0.0, "joint")
        if not (np.all(np.isfinite(st.q)) and np.all(np.isfinite(st.qd))):
            raise InputError(f"model '{model.name}': the operating state is not finite")
        return st
    if isinstance(state, dict):
        return _state_from_values(model, state)
    raise InputError(f"model '{model.name}': state must be None, a State or a mapping "
                     f"{{coordinate or rate name: value}}, received {type(state).__name__}")


def rate_name(name):
    """The name of the rate of tree coordinate `name`: '<joint>.rate' for '<joint>.angle' and
    '<joint>.position' (the outputs' name), else 'der(<name>)'."""
    for suffix in (".angle", ".position"):
        if name.endswith(suffix):
            return name[:-len(suffix)] + ".rate"
    return f"der({name})"


def _state_from_values(model, values):
    """The initial state with the named coordinates and rates set, the loops closed again
    (the other coordinates by minimum-norm Newton steps) and the other rates the
    minimum-norm solution of the velocity rows."""
    from .formulations import minimal, tmt

    st = tmt.initial_state(model)
    names = list(tmt.coordinates(model))
    rates = [rate_name(n) for n in names]
    q, qd = st.q.copy(), st.qd.copy()
    fixed_q, fixed_qd = [], []
    for key, val in values.items():
        try:
            v = float(val)
        except (TypeError, ValueError):
            v = float("nan")
        if not np.isfinite(v):
            raise InputError(f"model '{model.name}': state value {key!r} must be a finite "
                             f"number, received {val!r}")
        if key in names:
            q[names.index(key)] = v
            fixed_q.append(names.index(key))
        elif key in rates:
            qd[rates.index(key)] = v
            fixed_qd.append(rates.index(key))
        else:
            raise InputError(f"model '{model.name}': unknown coordinate {key!r}; coordinates "
                             f"are {names} and their rates {rates}")
    t = st.t
    n = len(names)
    free = [i for i in range(n) if i not in fixed_q]
    zero = np.zeros(n)
    scale = 1.0 + np.abs(q).max()
    for _ in range(60):
        phi, Dq, _, phi_t = minimal.rows(model, q, zero, t)
        if np.abs(phi).max(initial=0.0) <= 1e-14 * scale:
            break
        q[free] -= np.linalg.lstsq(Dq[:, free], phi, rcond=None)[0]
    phi, Dq, _, phi_t = minimal.rows(model, q, zero, t)
    if np.abs(phi).max(initial=0.0) > 1e-9 * scale:
        raise InputError(f"model '{model.name}': the coordinates {values} do not let the "
                         f"loops close (residual {np.abs(phi).max():.3g})")
    freed = [i for i in range(n) if i not in fixed_qd]
    if Dq.shape[0]:
        qd[freed] = np.linalg.lstsq(Dq[:, freed], -(Dq[:, fixed_qd] @ qd[fixed_qd] + phi_t),
                                    rcond=None)[0]
        if np.abs(Dq @ qd + phi_t).max() > 1e-9 * (1.0 + np.abs(qd).max()):
            raise InputError(f"model '{model.name}': the rates {values} violate the "
                             f"constraints")
    return State(t, q, qd, 0.0, "joint")


def _partition(model, q, t, independent=()):
    """(ind, dep) of the tree coordinates at q: the dependent ones by QR with column pivoting
    on Dq, among the coordinates not named in `independent` when that keeps the rank."""
    from scipy import linalg as sla

    from .formulations import minimal, tmt

    names = list(tmt.coordinates(model))
    n = len(names)
    _, Dq, _, _ = minimal.rows(model, q, np.zeros(n), t)
    if Dq.shape[0] == 0:
        return np.arange(n), np.zeros(0, np.intp)

    def qr_rank(cols):
        if len(cols) == 0:
            return 0, []
        _, R, piv = sla.qr(Dq[:, cols], mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        r = int(np.sum(d > 1e-10 * d[0])) if d.size and d[0] > 0 else 0
        return r, [cols[i] for i in piv[:r]]

    rank, dep = qr_rank(list(range(n)))
    keep = [names.index(k) for k in independent if k in names]
    if keep:
        others = [i for i in range(n) if i not in keep]
        r2, dep2 = qr_rank(others)
        if r2 == rank:
            dep = dep2
    dep = np.sort(np.array(dep, np.intp))
    ind = np.array([i for i in range(n) if i not in set(dep.tolist())], np.intp)
    return ind, dep


def _check_independent(model, ind, independent):
    """SingularSystemError unless the given `independent` coordinates are among the
    partition's independent ones `ind`."""
    from .formulations import tmt

    if not independent:
        return
    names = tmt.coordinates(model)
    have = {names[i] for i in ind}
    unknown = [k for k in independent if k not in names]
    if unknown:
        raise InputError(f"model '{model.name}': unknown coordinates {unknown}; coordinates "
                         f"are {list(names)}")
    if not set(independent) <= have:
        raise SingularSystemError(
            f"model '{model.name}': the coordinates {list(independent)} are not a set of "
            f"independent coordinates here (the closure needs {sorted(have)} or another set "
            f"of {len(have)})")


def _output_selection(model, outputs):
    from .outputs import output_spec

    spec = output_spec(model)
    names = [v.name for v in spec]
    if outputs is None:
        sel = [i for i, v in enumerate(spec) if v.kind == "real" and v.name not in _NONSMOOTH]
    else:
        if isinstance(outputs, str):
            outputs = [outputs]
        sel = []
        for k in outputs:
            if k not in names:
                raise InputError(f"model '{model.name}': unknown output {k!r}; outputs are "
                                 f"{names}")
            sel.append(names.index(k))
    return np.array(sel, np.intp), tuple(names[i] for i in sel)


# ------------------------------------------------------------------ derivatives
def _ridders(fun, z0, j, h0, con=1.6, ntab=10):
    """d fun / d z_j at z0 (vector-valued fun) by central differences extrapolated in h^2
    (Ridders); returns (derivative, estimated absolute error)."""
    def central(h):
        zp, zm = z0.copy(), z0.copy()
        zp[j] += h
        zm[j] -= h
        return (fun(zp) - fun(zm)) / (2.0 * h)

    con2 = con * con
    h = h0
    for _ in range(8):          # a first step too large for the closure: start smaller
        try:
            first = central(h)
            break
        except SingularSystemError:
            h /= 8.0
    else:
        first = central(h)      # raises, naming the closure that fails
    tab = [[first]]
    best, err = tab[0][0], np.inf
    for i in range(1, ntab):
        h /= con
        try:
            row = [central(h)]
        except SingularSystemError:
            break
        fac = con2
        for k in range(1, i + 1):
            row.append((row[k - 1] * fac - tab[i - 1][k - 1]) / (fac - 1.0))
            fac *= con2
            e = max(np.abs(row[k] - row[k - 1]).max(initial=0.0),
                    np.abs(row[k] - tab[i - 1][k - 1]).max(initial=0.0))
            if e <= err:
                err, best = e, row[k]
        if np.abs(row[i] - tab[i - 1][i - 1]).max(initial=0.0) >= 2.0 * err:
            break
        tab.append(row)
    return best, err


def _jacobian(fun, z0, steps, method, exact=()):
    """Columns d fun / d z_j; `exact`: indices where fun is affine (one central difference
    with the full step is exact to round-off). Returns (J, largest error estimate)."""
    f0 = fun(z0)
    J = np.zeros((f0.shape[0], z0.shape[0]))
    worst = 0.0 if method == "ridders" else float("nan")
    for j in range(z0.shape[0]):
        if method == "central" or j in exact:
            h = steps[j] if j in exact else 1e-6 * max(1.0, abs(z0[j])) * (steps[j] / 1e-2)
            zp, zm = z0.copy(), z0.copy()
            zp[j] += h
            zm[j] -= h
            J[:, j] = (fun(zp) - fun(zm)) / (2.0 * h)
        else:
            J[:, j], e = _ridders(fun, z0, j, steps[j])
            worst = max(worst, e)
    return J, worst


# ------------------------------------------------------------------ public functions
def linearize(model, state=None, inputs=None, outputs=None, method="ridders",
              independent=()):
    """The linear model x' = A x + B u, y = C x + D u of `model` around an operating point.

    state : None (the model's initial state), a State (joint coordinates of tmt, recursive
        or minimal, or newton_euler's absolute coordinates for a planar model), an
        Equilibrium, or a mapping {coordinate or rate name: value} applied to the initial
        state (loops closed again); see rate_name for the rates' names.
    inputs : the inputs at the operating point (None: zero, a mapping or an array).
    outputs : output names for y (default: every real output but the constraint residuals).
    method : "ridders" (central differences with Richardson extrapolation, default) or
        "central" (one central difference; the cross-check).
    independent : coordinate names to keep independent in the partition of a closed loop
        (default: QR with column pivoting chooses); SingularSystemError when they cannot all
        be independent at the operating point.
    Returns a LinearModel; its modes() gives eigenvalues, natural frequencies [Hz], damping
    ratios and mode shapes.
    """
    from .formulations import tmt

    if method not in ("ridders", "central"):
        raise InputError(f"linearize: method must be 'ridders' or 'central', received "
                         f"{method!r}")
    if isinstance(state, Equilibrium):
        if inputs is None:
            inputs = state.u
        state = state.state
    st = _tmt_state(model, state)
    u0 = model.input_vector(inputs)
    ind, dep = _partition(model, st.q, st.t, tuple(independent))
    _check_independent(model, ind, independent)
    sys_ = _Minimal(model, st.q, st.qd, st.t, ind, dep)
    # re-close the loops at the operating point to round-off (a State from an integrator
    # carries its tolerance's residual)
    q0, qd0 = sys_.full(st.q[ind], st.qd[ind])
    sys_.q0 = q0
    st = State(st.t, q0, qd0, 0.0, "joint")
    sel, y_names = _output_selection(model, outputs)
    f, nu = len(ind), len(u0)

    fun = _equations(model, sys_, st.t, sel)

    z0 = np.concatenate([q0[ind], qd0[ind], u0])
    steps = np.concatenate([1e-2 * np.maximum(1.0, np.abs(q0[ind])),
                            1e-1 * np.maximum(1.0, np.abs(qd0[ind])),
                            np.maximum(1.0, np.abs(u0))])
    J, err = _jacobian(fun, z0, steps, method, exact=set(range(2 * f, 2 * f + nu)))
    F0 = fun(z0)
    A = np.zeros((2 * f, 2 * f))
    A[:f, f:] = np.eye(f)
    A[f:] = J[:f, :2 * f]
    B = np.zeros((2 * f, nu))
    B[f:] = J[:f, 2 * f:]
    C, D = J[f:, :2 * f], J[f:, 2 * f:]
    names = sys_.names
    x_names = tuple(names[i] for i in ind) + tuple(rate_name(names[i]) for i in ind)
    return LinearModel(A, B, C, D, x_names, tuple(model.input_names), y_names, st, u0,
                      z0[:2 * f], F0[f:], np.concatenate([qd0[ind], F0[:f]]),
                      tuple(names[i] for i in ind), tuple(names[i] for i in dep), method,
                      float(err))


def equilibrium(model, inputs=None, free=None, state=None, tol=1e-10, max_iterations=50):
    """The static equilibrium of `model` (qd = 0, qdd = 0), or a trim.

    inputs : the given inputs (None: zero, a mapping or an array).
    free : None: solve for the pose with the inputs given (Newton on the minimal equations
        from the pose of `state`). Or names of inputs and/or coordinates: each named input
        is solved for, and holds one coordinate at its value in `state` (the independent
        coordinate it acts on most); each named coordinate is held at its value in `state`
        by the input that acts on it most. The other coordinates are solved for as before.
    state : the starting pose and the held values (as in linearize; default the model's
        initial state); its rates are ignored.
    tol : convergence when the largest generalised force is below tol times a force scale
        (1 + the largest generalised force of gravity and the inputs at the start).
    Newton steps are limited to 0.5 rad or m and backtracked until the residual decreases;
    where Newton stalls (a loop starting at dead centre) a step along the generalised force
    (downhill in the potential) is taken instead. Newton finds the equilibrium nearest the
    start, stable or not. Returns an Equilibrium; raises SingularSystemError when Newton does
    not converge.
    """
    from .formulations import tmt
    from .inverse import inverse_dynamics

    if isinstance(state, Equilibrium):
        state = state.state
    st = _tmt_state(model, state)
    u = model.input_vector(inputs)
    in_names = list(model.input_names)
    names = list(tmt.coordinates(model))
    free = [free] if isinstance(free, str) else list(free or [])
    for k in free:
        if k not in in_names and k not in names:
            raise InputError(f"equilibrium: {k!r} in free is neither an input {in_names} nor "
                             f"a coordinate {names}")
    held_names = [k for k in free if k in names]
    zero_n = np.zeros(len(names))
    q = st.q.copy()

    def setup(q):
        """The minimal equations at pose q (its partition keeps held coordinates
        independent), and the force function of (q_i, u)."""
        ind, dep = _partition(model, q, st.t, tuple(held_names))
        sys_ = _Minimal(model, q, zero_n, st.t, ind, dep)
        zf = np.zeros(len(ind))

        def force(qi, uu):
            qq, qd = sys_.full(qi, zf)
            return sys_.generalised(qq, qd, uu)[1]
        return sys_, force

    sys_, force = setup(q)
    q = sys_.full(q[sys_.ind], np.zeros(sys_.f))[0]
    sys_, force = setup(q)
    f = sys_.f
    ind_names = [names[i] for i in sys_.ind]
    held_coord = {}                     # coordinate name -> its held value
    free_u = []
    if free:
        qi0 = q[sys_.ind]
        Bq = np.column_stack([force(qi0, u + e) - force(qi0, u - e) for e in np.eye(len(u))]) \
            / 2.0 if len(u) else np.zeros((f, 0))
        held = []
        for k in free:
            if k in in_names:
                j = in_names.index(k)
                if j in free_u:
                    raise InputError(f"equilibrium: input {k!r} named twice in free")
                col = np.abs(Bq[:, j]).copy()
                col[held] = -1.0
                i = int(np.argmax(col)) if f else -1
                if i < 0 or col[i] <= 0:
                    raise InputError(f"equilibrium: input {k!r} acts on no coordinate left "
                                     f"to hold")
                free_u.append(j)
                held.append(i)
        for k in free:
            if k in names:
                if k not in ind_names:
                    raise InputError(f"equilibrium: coordinate {k!r} is not independent here "
                                     f"(independent: {ind_names})")
                i = ind_names.index(k)
                if i in held:
                    continue
                row = np.abs(Bq[i]).copy()
                row[free_u] = -1.0
                j = int(np.argmax(row)) if len(u) else -1
                if j < 0 or row[j] <= 0:
                    raise InputError(f"equilibrium: no input acts on coordinate {k!r} "
                                     f"(inputs {in_names})")
                free_u.append(j)
                held.append(i)
        held_coord = {ind_names[i]: float(qi0[i]) for i in held}
        held_names = list(held_coord)

    def split(sys_):
        """(moving independent positions, held positions) in sys_.ind."""
        inames = [names[i] for i in sys_.ind]
        held_pos = [inames.index(k) for k in held_coord]
        return [i for i in range(sys_.f) if i not in held_pos], held_pos

    def resid(sys_, force, q, z):
        moving, _ = split(sys_)
        qi, uu = q[sys_.ind].copy(), u.copy()
        qi[moving] = z[:len(moving)]
        uu[free_u] = z[len(moving):]
        return force(qi, uu), qi, uu

    uu = u.copy()
    r = resid(sys_, force, q, np.concatenate([q[sys_.ind][split(sys_)[0]], u[free_u]]))[0]
    fscale = 1.0 + np.abs(r).max(initial=0.0)
    it = 0
    for it in range(1, max_iterations + 1):
        moving, _ = split(sys_)
        z = np.concatenate([q[sys_.ind][moving], uu[free_u]])
        r, qi, _ = resid(sys_, force, q, z)
        if np.abs(r).max(initial=0.0) <= tol * fscale:
            it -= 1
            break
        hs = 1e-6 * np.maximum(1.0, np.abs(z))
        J = np.column_stack([(resid(sys_, force, q, z + h * e)[0]
                              - resid(sys_, force, q, z - h * e)[0]) / (2 * h)
                             for h, e in zip(hs, np.eye(len(z)))]) if len(z) else \
            np.zeros((sys_.f, 0))
        step = np.linalg.lstsq(J, -r, rcond=None)[0]
        a, n0 = 1.0, np.abs(r).max()
        big = 0.5 / max(1e-300, np.abs(step[:len(moving)]).max(initial=0.0))
        a = min(1.0, big)              # at most 0.5 rad or m per iteration
        while True:                     # backtracking: the residual must decrease
            try:
                rn, qi, un = resid(sys_, force, q, z + a * step)
                if np.abs(rn).max() < n0 or a < 1e-4:
                    break
            except SingularSystemError:
                if a < 1e-4:
                    raise
            a *= 0.5
        if not np.abs(rn).max() < n0 and n0 > 1e-6 * fscale and len(moving) and \
                np.abs(r[moving]).max() > 0:
            # Newton makes no progress (a stationary point of the residual, e.g. a loop at
            # dead centre): move along the generalised force instead (downhill in the
            # potential energy), 0.05 rad or m at most, and continue from there
            kick = np.zeros_like(z)
            kick[:len(moving)] = 0.05 * r[moving] / np.abs(r[moving]).max()
            rn, qi, un = resid(sys_, force, q, z + kick)
        q = sys_.full(qi, np.zeros(sys_.f))[0]
        uu = un
        r = rn
        sys_, force = setup(q)         # partition again at the new pose
    else:
        if np.abs(r).max(initial=0.0) > tol * fscale:
            raise SingularSystemError(
                f"model '{model.name}': no static equilibrium found in {max_iterations} "
                f"Newton iterations (largest generalised force left {np.abs(r).max():.3g}); "
                f"start from another pose (state=) or free other inputs")
    ind_names = [names[i] for i in sys_.ind]
    qi = q[sys_.ind]
    eq_state = State(st.t, q, np.zeros_like(q), 0.0, "joint")
    x, xd = tmt.absolute(model, q, np.zeros_like(q))
    stat = inverse_dynamics(model, st.t, x, xd, np.zeros_like(x), uu).residual
    return Equilibrium(eq_state, dict(zip(in_names, map(float, uu))), uu,
                       {n: float(v) for n, v in zip(ind_names, qi)},
                       float(np.abs(r).max(initial=0.0)), float(stat), it)


def directional_derivative(model, state, u, unknowns, knowns, seed, method="ridders",
                           independent=()):
    """What fmi2GetDirectionalDerivative returns: d(unknowns)/d(knowns) . seed at (state, u).

    knowns : names of states (linearize's x_names) and inputs (model inputs); unknowns :
    names of state derivatives ('der(<state name>)', e.g. 'der(A.angle)' = 'A.rate' and
    'der(A.rate)') and outputs; seed : one value per known. One directional difference (Ridders
    along the seed) of the same equations as linearize. independent : the independent
    coordinates the states are declared in (an FMU's ModelStructure, model_structure());
    SingularSystemError when they no longer describe a closed loop at `state`. Returns an
    array, one per unknown.
    """
    lin_state = _tmt_state(model, state)
    u0 = model.input_vector(u)
    from .formulations import tmt
    from .outputs import Outputs, output_names

    seed = np.asarray(seed, dtype=float).reshape(-1)
    if seed.shape[0] != len(knowns):
        raise InputError(f"directional_derivative: {len(knowns)} knowns but {seed.shape[0]} "
                         f"seed values")
    ind, dep = _partition(model, lin_state.q, lin_state.t, tuple(independent))
    _check_independent(model, ind, independent)
    sys_ = _Minimal(model, lin_state.q, lin_state.qd, lin_state.t, ind, dep)
    q0, qd0 = sys_.full(lin_state.q[ind], lin_state.qd[ind])
    sys_.q0 = q0
    names = sys_.names
    f = len(ind)
    x_names = [names[i] for i in ind] + [rate_name(names[i]) for i in ind]
    z_names = x_names + list(model.input_names)
    direction = np.zeros(2 * f + len(u0))
    for k, v in zip(knowns, seed):
        if k not in z_names:
            raise InputError(f"directional_derivative: unknown known {k!r}; states are "
                             f"{x_names}, inputs {list(model.input_names)}")
        direction[z_names.index(k)] += v
    outs = list(output_names(model))
    der = {f"der({n})": i for i, n in enumerate(x_names)}
    rows = []
    for k in unknowns:
        if k in der:
            rows.append(("x", der[k]))
        elif k in outs:
            rows.append(("y", outs.index(k)))
        else:
            raise InputError(f"directional_derivative: unknown unknown {k!r}; state "
                             f"derivatives are {list(der)}, outputs {outs}")
    z0 = np.concatenate([q0[ind], qd0[ind], u0])

    def fun(a):
        z = z0 + a[0] * direction
        q, qd = sys_.full(z[:f], z[f:2 * f])
        uu = z[2 * f:]
        xdot = np.concatenate([z[f:2 * f], sys_.accelerations(q, qd, uu)])
        y = Outputs(model, State(lin_state.t, q, qd, 0.0, "joint"), uu, "tmt").values() \
            if any(r[0] == "y" for r in rows) else None
        return np.array([xdot[i] if kind == "x" else y[i] for kind, i in rows])

    if not np.any(direction):
        return np.zeros(len(rows))
    scale = 1e-2 * max(1.0, float(np.abs(z0).max(initial=0.0))) / float(
        np.abs(direction).max())
    if method == "central":
        h = 1e-6 * scale / 1e-2
        return (fun(np.array([h])) - fun(np.array([-h]))) / (2 * h)
    return _ridders(fun, np.zeros(1), 0, scale)[0]


def model_structure_numeric(model, state=None, inputs=None, samples=2, seed=0):
    """model_structure by finite differences (the reference of tests/test_model_structure.py;
    its cost grows with the square of the model and more): the states (the
    independent coordinates and rates of linearize at `state`), their derivatives
    ('der(<state>)'), and which states and inputs each derivative and each output depends on.

    The dependencies are the union of the nonzero entries of [A B; C D] at `state` and at
    `samples` random nearby operating points (coordinates moved by up to 0.1 rad or m, rates
    by up to 1 per s, inputs by up to 1; seeded), so that an entry that happens to vanish at
    one pose is not taken for structural. Returns {"states": [...], "derivatives": [...],
    "inputs": [...], "derivative_dependencies": {derivative: [knowns]},
    "output_dependencies": {output: [knowns]}} (knowns: state and input names)."""
    base = linearize(model, state, inputs)
    rng = np.random.default_rng(seed)
    f = base.n_dof
    def nonzero(p):
        # relative to each row's largest entry (a reaction torque of 5e-5 N.m per N of an
        # input is a dependency though the matrix holds 8e4 elsewhere: the double wishbone)
        return p > 1e-9 * (1.0 + p.max(axis=1, initial=0.0))[:, None]

    pattern = np.abs(np.block([[base.A, base.B], [base.C, base.D]]))
    mask = nonzero(pattern)
    for _ in range(samples):
        x = base.x0 + np.concatenate([rng.uniform(-0.1, 0.1, f), rng.uniform(-1.0, 1.0, f)])
        u = base.u0 + rng.uniform(-1.0, 1.0, base.u0.shape)
        try:
            lin = linearize(model, dict(zip(base.x_names, x)), u, independent=base.independent)
        except (SingularSystemError, InputError):
            continue
        mask |= nonzero(np.abs(np.block([[lin.A, lin.B], [lin.C, lin.D]])))
    known = list(base.x_names) + list(base.u_names)
    ders = [f"der({n})" for n in base.x_names]
    deps = {d: [known[j] for j in np.flatnonzero(mask[i])] for i, d in enumerate(ders)}
    outs = {y: [known[j] for j in np.flatnonzero(mask[2 * f + i])]
            for i, y in enumerate(base.y_names)}
    return {"states": list(base.x_names), "derivatives": ders, "inputs": list(base.u_names),
            "independent": list(base.independent), "derivative_dependencies": deps,
            "output_dependencies": outs}


def model_structure(model, state=None, inputs=None, checks=8, seed=0):
    """What an FMU declares in ModelStructure for directional derivatives: the states (the
    independent coordinates and rates of linearize at `state`), their derivatives
    ('der(<state>)'), and which states and inputs each derivative and each output depends on.

    The states come from one coordinate partitioning (QR with column pivoting on Dq) at
    `state` (default the initial state); the dependencies from the model's structure
    (fmu_mb.dynamics.structure: the tree paths, the constraint groups, the components of
    bodies connected by joints, elements and contacts, the inputs of the elements): exact or
    a superset of the true ones, in time linear in the model's size (for models whose
    components stay small; a component's sets are as large as the component). A numeric spot
    check follows: `checks` random directions (seeded), each moving only knowns that a group
    of unknowns is declared independent of, by forward differences of the minimal equations
    and the outputs (checks + 1 evaluations; without dependent coordinates those of the
    recursive formulation, linear in the model's size, _tree_equations); an unknown that
    changes all the same is given those knowns too (and a warning says so). The check
    evaluates the equations at `state`, so a singular pose raises SingularSystemError as
    linearize does.

    Returns {"states": [...], "derivatives": [...], "inputs": [...], "independent": [...],
    "derivative_dependencies": {derivative: [knowns]}, "output_dependencies": {output:
    [knowns]}, "check": {"directions": int, "widened": [unknown names]}} (knowns: state and
    input names, in the order states then inputs), the same keys as model_structure_numeric.
    """
    from . import structure
    from .formulations import minimal

    st = _tmt_state(model, state)
    u0 = model.input_vector(inputs)
    ind, dep = _partition(model, st.q, st.t)
    sys_ = _Minimal(model, st.q, st.qd, st.t, ind, dep)
    q0, qd0 = sys_.full(st.q[ind], st.qd[ind])
    sys_.q0 = q0
    names = sys_.names
    f, nu = len(ind), len(u0)
    x_names = [names[i] for i in ind] + [rate_name(names[i]) for i in ind]
    u_names = list(model.input_names)
    known = x_names + u_names
    Dq = minimal.rows(model, q0, np.zeros(len(names)), st.t)[1] if len(dep) else None
    acc, outs, _ = structure.dependencies(model, names, ind, Dq)
    sel, y_names = _output_selection(model, None)

    def col(k):
        kind, i = k
        return i if kind == "q" else (f + i if kind == "qd" else 2 * f + i)

    # rows: der(q_i) (f), der(qd_i) (f), outputs; columns: states, inputs
    mask = np.zeros((2 * f + len(sel), 2 * f + nu), bool)
    mask[np.arange(f), f + np.arange(f)] = True
    for k, s in enumerate(acc):
        mask[f + k, [col(x) for x in s]] = True
    for r, y in enumerate(y_names):
        mask[2 * f + r, [col(x) for x in outs[y]]] = True

    fun = _tree_equations(model, sys_, st.t, sel) or _equations(model, sys_, st.t, sel)

    z0 = np.concatenate([q0[ind], qd0[ind], u0])
    widened, done = _spot_check(fun, z0, mask, f, checks, np.random.default_rng(seed))
    if widened:
        import warnings

        unknown = [f"der({x})" for x in x_names] + list(y_names)
        widened = [unknown[r] for r in widened]
        warnings.warn(f"model_structure of '{model.name}': the numeric spot check found "
                      f"dependencies the structure missed for {widened}; declared on the "
                      f"knowns moved", RuntimeWarning, stacklevel=2)
    ders = [f"der({n})" for n in x_names]
    deps = {d: [known[j] for j in np.flatnonzero(mask[i])] for i, d in enumerate(ders)}
    out_deps = {y: [known[j] for j in np.flatnonzero(mask[2 * f + i])]
                for i, y in enumerate(y_names)}
    return {"states": x_names, "derivatives": ders, "inputs": u_names,
            "independent": [names[i] for i in ind], "derivative_dependencies": deps,
            "output_dependencies": out_deps,
            "check": {"directions": done, "widened": list(widened)}}


def _spot_check(fun, z0, mask, f, checks, rng, h=1e-3):
    """Forward differences of fun (the accelerations of the f independent coordinates, then
    the outputs) along random directions that move only knowns some unknowns are declared
    independent of (one direction per distinct pattern of mask, at most `checks` of them,
    each evaluated once, beside one evaluation at z0). Every unknown whose pattern excludes
    all the moved knowns must not change (beyond round-off: 1e-8 relative); one that does gets
    them added to its row of `mask` (in place; the rows of mask are der(q_i), der(qd_i),
    outputs). Returns (indices of the widened rows of mask, number of directions taken)."""
    F0 = fun(z0)                    # the rows der(qd_i) and outputs: mask[f:]
    rows = mask[f:]
    patterns = {}
    for r, row in enumerate(rows):
        if not row.all():
            patterns.setdefault(row.tobytes(), row)
    pats = list(patterns.values())
    if len(pats) > checks:
        pats = [pats[i] for i in rng.choice(len(pats), checks, replace=False)]
    scale = np.maximum(1.0, np.abs(z0))
    widened, done = set(), 0
    for pat in pats:
        move = ~pat
        d = np.zeros_like(z0)
        d[move] = rng.uniform(0.5, 1.0, move.sum()) * rng.choice([-1.0, 1.0], move.sum()) \
            * scale[move]
        for step in (h, 0.1 * h):
            try:
                Fp = fun(z0 + step * d)
                break
            except SingularSystemError:     # a closure lost nearby: a shorter step
                Fp = None
        if Fp is None:
            continue
        done += 1
        quiet = ~(rows & move).any(axis=1)          # unknowns declared independent of d
        tol = 1e-8 * (1.0 + np.maximum(np.abs(F0), np.abs(Fp)))
        bad = np.flatnonzero(quiet & ~(np.abs(Fp - F0) <= tol))
        for r in bad:
            rows[r] |= move
            widened.add(f + int(r))
    return sorted(widened), done
