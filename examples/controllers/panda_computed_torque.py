"""Computed-torque control (a joint PD on the linearised robot, with gravity, Coriolis and
inertia compensation) for the Franka Panda, as a pythonfmu co-simulation FMU
(examples/panda_pd.py builds and runs it).

    tau = M(q) (qdd_ref + kp (q_ref - q) + kd (qd_ref - qd)) + C(q, qd) qd + g(q) + d qd

(Pinocchio's rnea on the URDF shipped in the FMU's resources; d the URDF's joint damping),
reference q_ref,i(t) = q0_i + a_i sin(2 pi f t) (parameters `q0_<joint>`,
`amplitude_<joint>`, `frequency`; the fingers hold q0), gains kp = w^2, kd = 2 w (the error
of every joint a critically damped second-order system of w = 20 rad/s). Sampled: the
measurement at the step's start gives the torque held over the step.
Inputs `<joint>.q`, `<joint>.qd`; outputs `<joint>.tau`, `<joint>.q_ref`.
The host needs Python with pinocchio (pip pin) and pythonfmu.
"""
import math
from pathlib import Path

from pythonfmu import Fmi2Causality, Fmi2Slave, Fmi2Variability, Real
from pythonfmu.enums import Fmi2Initial

JOINTS = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1",
                                                     "panda_finger_joint2"]
Q0 = [0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02, 0.02]
AMPLITUDE = [0.4, 0.3, 0.4, 0.3, 0.5, 0.3, 0.5, 0.0, 0.0]
KP = [400.0] * len(JOINTS)      # w^2 [1/s2]
KD = [40.0] * len(JOINTS)       # 2 w [1/s]


class PandaComputedTorque(Fmi2Slave):
    author = "fmu_mb examples"
    description = "computed-torque joint control for the Franka Panda"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.frequency = 0.5
        self.q = list(Q0)                 # the start values: the plant's initial pose
        self.qd = [0.0] * len(JOINTS)
        self.tau = [0.0] * len(JOINTS)
        self.q_ref = list(Q0)
        self.q0, self.amplitude, self.kp, self.kd = list(Q0), list(AMPLITUDE), list(KP), list(KD)
        self._pin = None
        self.register_variable(Real("frequency", causality=Fmi2Causality.parameter,
                                    variability=Fmi2Variability.tunable,
                                    description="frequency of the reference [Hz]"))
        for i, j in enumerate(JOINTS):
            for name, arr, caus in (("q", self.q, Fmi2Causality.input),
                                    ("qd", self.qd, Fmi2Causality.input)):
                self.register_variable(Real(
                    f"{j}.{name}", causality=caus, getter=self._get(arr, i),
                    setter=self._set(arr, i)))
            for name, arr in (("tau", self.tau), ("q_ref", self.q_ref)):
                self.register_variable(Real(
                    f"{j}.{name}", causality=Fmi2Causality.output, initial=Fmi2Initial.exact,
                    getter=self._get(arr, i)))
            for name, arr in (("q0", self.q0), ("amplitude", self.amplitude),
                              ("kp", self.kp), ("kd", self.kd)):
                self.register_variable(Real(
                    f"{name}_{j}", causality=Fmi2Causality.parameter,
                    variability=Fmi2Variability.tunable, getter=self._get(arr, i),
                    setter=self._set(arr, i)))

    @staticmethod
    def _get(arr, i):
        return lambda: arr[i]

    @staticmethod
    def _set(arr, i):
        def setter(value):
            arr[i] = value
        return setter

    def _robot(self):
        import pinocchio as pin
        if self._pin is None:
            urdf = Path(self.resources) / "panda.urdf"
            model = pin.buildModelFromUrdf(str(urdf))
            names = list(model.names)
            self._pin = (model, model.createData(),
                         [model.joints[names.index(j)].idx_q for j in JOINTS])
        return self._pin

    def _law(self, t):
        import numpy as np
        import pinocchio as pin
        model, data, idx = self._robot()
        w = 2.0 * math.pi * self.frequency
        s, c = math.sin(w * t), math.cos(w * t)
        q, qd = np.zeros(model.nq), np.zeros(model.nv)
        q[idx], qd[idx] = self.q, self.qd
        a = np.zeros(model.nv)
        for i, k in enumerate(idx):
            self.q_ref[i] = self.q0[i] + self.amplitude[i] * s
            a[k] = (-self.amplitude[i] * w * w * s + self.kp[i] * (self.q_ref[i] - self.q[i])
                    + self.kd[i] * (self.amplitude[i] * w * c - self.qd[i]))
        tau = pin.rnea(model, data, q, qd, a) + model.damping * qd
        for i, k in enumerate(idx):
            self.tau[i] = float(tau[k])

    def exit_initialization_mode(self):
        self._law(0.0)

    def do_step(self, current_time, step_size):
        self._law(current_time)
        return True
