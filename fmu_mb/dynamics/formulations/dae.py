"""The index-3 DAE a formulation hands to the implicit integrators (fmu_mb.dynamics.implicit).

    M(q) qdd + D(q, t)' lam = f(q, qd, t, u),      Phi(q, t) = 0

with D = dPhi/dq, the velocity constraint D qd + Phi_t = 0 and the acceleration constraint
D qdd + conv = 0 (conv = D_{k,pq} qd_p qd_q + Phi_tt, the sign of seed 000 eq. 12). The
constraint force on the coordinates is -D' lam.

What a formulation must provide to run the implicit methods (generalized_alpha,
trapezoidal), as attributes of its namespace in formulations/__init__.py:

- `dae(model, q, qd, t, u) -> DaeTerms` at any (q, qd, t) with inputs u (n_inputs,): the
  terms below. M may be the diagonal (n,) when it is constant and diagonal (absolute
  coordinates) or a full (n, n) matrix (joint coordinates, or a spatial body's inertia in
  rotating coordinates). f holds everything that is not M qdd or D' lam: applied forces,
  element forces -Dv' s, gravity, and the velocity-dependent (convective, gyroscopic) terms.
- optionally `increment(model, q, dq) -> q (+) dq`: how a position moves by a velocity-space
  increment dq = h v + ... (default q + dq). A spatial formulation whose q holds rotation
  parameters (quaternions, rotation matrices) while qd is an angular velocity gives the
  exponential map here (a Lie-group generalized-alpha, Arnold-Bruls-Cardona); the Newton
  matrices are built by finite differences through this map, so nothing else changes.
- `project(model, y, t, tol)` (already part of every formulation) for the drift control.

Everything is evaluated at the states the integrator proposes; the integrator never looks
into the formulation's internals.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DaeTerms:
    """M (n,) diagonal or (n, n) [kg, kg m2]; f (n,) [N, N.m]; phi (m,) residual;
    D (m, n) = dPhi/dq; phi_t (m,) = dPhi/dt at fixed q; conv (m,) so that D qdd = -conv."""

    M: np.ndarray
    f: np.ndarray
    phi: np.ndarray
    D: np.ndarray
    phi_t: np.ndarray
    conv: np.ndarray

    def mass_times(self, a):
        """M a for a diagonal or full M."""
        return self.M * a if self.M.ndim == 1 else self.M @ a

    def mass_matrix(self):
        """M as an (n, n) array."""
        return np.diag(self.M) if self.M.ndim == 1 else self.M
