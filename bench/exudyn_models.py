"""The benchmark models in Exudyn, built the way an Exudyn user would:

- open chains (double pendulum, N-link chain): one ObjectKinematicTree (minimal joint
  coordinates, RevoluteZ joints) on a NodeGenericODE2, integrated by the explicit adaptive
  DOPRI5 solver;
- closed loops (slider-crank, N-four-bar): planar rigid bodies (NodeRigidBody2D,
  ObjectRigidBody2D) with RevoluteJoint2D and CoordinateConstraints (the slider), integrated
  by the implicit index-3 generalized-alpha solver (Exudyn's default dynamic solver) with a
  fixed step.

Every function returns an object with run(t_end, tol_or_step) -> (wall [s], joints, rates)
where joints / rates map fmu_mb's joint names to joint angles / rates at t_end, so both
engines are compared on the same quantities. The time of the solver call only is measured
(the system is built and assembled before the clock starts).
"""
import math
import sys
import time

sys.exudynFast = True          # the release build without range checks, as for production runs
import exudyn as exu  # noqa: E402
import numpy as np  # noqa: E402
from exudyn.itemInterface import (CoordinateConstraint, LoadMassProportional,  # noqa: E402
                                  MarkerBodyMass, MarkerBodyPosition, MarkerNodeCoordinate,
                                  NodeGenericODE2, NodePointGround, NodeRigidBody2D,
                                  ObjectGround, ObjectKinematicTree, ObjectRigidBody2D,
                                  RevoluteJoint2D)

VERSION = exu.__version__
#: the clock of every run() (bench/run.py --cpu sets time.process_time: Exudyn solves in the
#: calling thread, numberOfThreads = 1)
CLOCK = time.perf_counter


def _settings(t_end, steps):
    s = exu.SimulationSettings()
    ti = s.timeIntegration
    ti.startTime, ti.endTime, ti.numberOfSteps = 0.0, t_end, max(1, int(steps))
    ti.verboseMode = 0
    s.solution.file.write = False
    s.show.statistics = False
    s.show.computationTime = False
    return s


def _explicit(s, tol):
    ti = s.timeIntegration
    ti.automaticStepSize = True
    ti.minimumStepSize = 1e-14
    ti.relativeTolerance = tol
    ti.absoluteTolerance = tol * 1e-2


# ------------------------------------------------------------------ kinematic-tree chains
class Chain:
    """Planar chain of uniform rods as a KinematicTree; names: fmu_mb joint names."""

    def __init__(self, names, masses, lengths, gravity, q0, qd0):
        self.names, self.m, self.L = names, list(masses), list(lengths)
        self.gravity, self.q0, self.qd0 = gravity, list(q0), list(qd0)

    def build(self):
        n = len(self.m)
        SC = exu.SystemContainer()
        mbs = SC.AddSystem()
        nd = mbs.AddNode(NodeGenericODE2(referenceCoordinates=[0.0] * n,
                                         initialCoordinates=self.q0,
                                         initialCoordinates_t=self.qd0,
                                         numberOfODE2Coordinates=n))
        inertias = [np.diag([0.0, m * L * L / 12, m * L * L / 12])
                    for m, L in zip(self.m, self.L)]
        obj = mbs.AddObject(ObjectKinematicTree(
            nodeNumber=nd, jointTypes=[exu.JointType.RevoluteZ] * n,
            linkParents=list(range(-1, n - 1)),
            jointTransformations=exu.Matrix3DList([np.eye(3)] * n),
            jointOffsets=exu.Vector3DList([[0.0, 0.0, 0.0]] +
                                          [[L, 0.0, 0.0] for L in self.L[:-1]]),
            linkInertiasCOM=exu.Matrix3DList(inertias),
            linkCOMs=exu.Vector3DList([[L / 2, 0.0, 0.0] for L in self.L]),
            linkMasses=self.m, baseOffset=[0.0, 0.0, 0.0],
            gravity=[self.gravity[0], self.gravity[1], 0.0],
            jointForceVector=[0.0] * n))
        mbs.Assemble()
        return SC, mbs, obj

    def run(self, t_end, p, solver="DOPRI5"):
        """solver "DOPRI5": adaptive, p = tolerance; "RK67" (or another explicit fixed-step
        method): p = step size [s], without the end-of-step accelerations (not needed for the
        next step: the cheapest setting)."""
        SC, mbs, _ = self.build()
        if solver == "DOPRI5":
            s = _settings(t_end, 2)  # numberOfSteps caps the step size: let DOPRI5 choose
            _explicit(s, p)
        else:
            s = _settings(t_end, max(1, round(t_end / p)))
            s.timeIntegration.automaticStepSize = False
            s.timeIntegration.explicitIntegration.computeEndOfStepAccelerations = False
        t0 = CLOCK()
        mbs.SolveDynamic(s, solverType=getattr(exu.DynamicSolverType, solver))
        wall = CLOCK() - t0
        q = mbs.systemData.GetODE2Coordinates()
        qd = mbs.systemData.GetODE2Coordinates_t()
        return wall, dict(zip(self.names, q)), dict(zip(self.names, qd))


def double_pendulum():
    return Chain(["A", "B"], [1.0, 1.0], [0.55, 0.55], (9.81, 0.0),
                 [math.radians(30), math.radians(30)], [0.0, 0.0])


def pendulum_chain(n, L=0.1, m=0.1, phi0=0.5):
    return Chain([f"J{i}" for i in range(n)], [m] * n, [L] * n, (0.0, -9.81),
                 [phi0] + [0.0] * (n - 1), [0.0] * n)


class CoSimPendulum:
    """The double pendulum stepped in process: the solver is initialised once and advanced
    by communication steps (the pattern of exudyn.interactive / artificialIntelligence):
    set the joint torque, SolveSteps over [t, t + dt], copy the state to the initial one.

    solver "DOPRI5": adaptive with tolerance tol; "RK44" / "RK67": fixed step, `steps`
    steps per communication step (one RK44 step per 1 ms step is the reference point of
    the co-simulation target)."""

    def __init__(self, tol=1e-8, solver="DOPRI5", steps=1):
        self.model = double_pendulum()
        self.SC, self.mbs, self.obj = self.model.build()
        self.s = _settings(1e-3, steps)
        if solver == "DOPRI5":
            _explicit(self.s, tol)
        else:
            self.s.timeIntegration.automaticStepSize = False
        self.s.timeIntegration.solverType = getattr(exu.DynamicSolverType, solver)
        self.solver = exu.MainSolverExplicit()
        self.solver.InitializeSolver(self.mbs, self.s)
        self.t = 0.0

    def step(self, h_input, dt):
        mbs, s, ti = self.mbs, self.s, self.s.timeIntegration
        # an RSDA input h acts to decrease the joint angle: joint torque -h
        mbs.SetObjectParameter(self.obj, "jointForceVector", [-h_input, 0.0])
        ti.startTime, ti.endTime = self.t, self.t + dt
        self.solver.InitializeSolverInitialConditions(mbs, s)
        self.solver.SolveSteps(mbs, s)
        mbs.systemData.SetSystemState(systemStateList=mbs.systemData.GetSystemState(),
                                      configuration=exu.ConfigurationType.Initial)
        self.t += dt
        q = mbs.systemData.GetODE2Coordinates()
        qd = mbs.systemData.GetODE2Coordinates_t()
        return q[0], q[1], qd[0], qd[1]


# ------------------------------------------------------------------ rigid bodies + joints
class Planar:
    """Planar rigid bodies with revolute joints (and coordinate locks), generalized-alpha.

    bodies: [(name, mass, inertia, (x, y, phi, vx, vy, omega))]; joints: [(fmu_mb name,
    parent body name or None for ground, parent point, child name, child point)];
    locks: [(body name, coordinate index)] fixed to their initial value (coordinate 1 = y,
    2 = phi); gravity (gx, gy)."""

    def __init__(self, bodies, joints, locks, gravity):
        self.bodies, self.joints, self.locks, self.gravity = bodies, joints, locks, gravity

    def build(self):
        SC = exu.SystemContainer()
        mbs = SC.AddSystem()
        ground = mbs.AddObject(ObjectGround())
        gnode = mbs.AddNode(NodePointGround())
        nodes, objs, phi0 = {}, {}, {}
        for name, m, I, (x, y, phi, vx, vy, w) in self.bodies:
            nd = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[x, y, phi],
                                             initialVelocities=[vx, vy, w]))
            b = mbs.AddObject(ObjectRigidBody2D(physicsMass=m, physicsInertia=I,
                                                nodeNumber=nd))
            mm = mbs.AddMarker(MarkerBodyMass(bodyNumber=b))
            mbs.AddLoad(LoadMassProportional(markerNumber=mm, loadVector=[
                self.gravity[0], self.gravity[1], 0.0]))
            nodes[name], objs[name], phi0[name] = nd, b, phi
        for _, parent, pp, child, cp in self.joints:
            m0 = mbs.AddMarker(MarkerBodyPosition(
                bodyNumber=ground if parent is None else objs[parent],
                localPosition=[pp[0], pp[1], 0.0]))
            m1 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=objs[child],
                                                  localPosition=[cp[0], cp[1], 0.0]))
            mbs.AddObject(RevoluteJoint2D(markerNumbers=[m0, m1]))
        for name, k in self.locks:
            mg = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=gnode, coordinate=0))
            mk = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes[name], coordinate=k))
            mbs.AddObject(CoordinateConstraint(markerNumbers=[mg, mk]))
        mbs.Assemble()
        return SC, mbs, nodes, phi0

    def run(self, t_end, h, solver="GeneralizedAlpha", sparse=False, jac_per_step=True):
        """Fixed step h with an implicit solver: "GeneralizedAlpha" (index 3, Exudyn's
        default) or "TrapezoidalIndex2"; modified Newton, with the Jacobian updated once per
        step (jac_per_step) or only when Newton stalls; sparse: the EigenSparse solver."""
        SC, mbs, nodes, phi0 = self.build()
        s = _settings(t_end, round(t_end / h))
        s.timeIntegration.newton.useModifiedNewton = True
        s.timeIntegration.newton.modifiedNewtonJacUpdatePerStep = jac_per_step
        if sparse:
            s.linearSolver.solverType = exu.LinearSolverType.EigenSparse
        t0 = CLOCK()
        mbs.SolveDynamic(s, solverType=getattr(exu.DynamicSolverType, solver))
        wall = CLOCK() - t0
        q = mbs.systemData.GetODE2Coordinates()
        qd = mbs.systemData.GetODE2Coordinates_t()
        ang, rate = {}, {}
        for name, nd in nodes.items():
            i = mbs.GetNodeODE2Index(nd)
            ang[name], rate[name] = phi0[name] + q[i + 2], qd[i + 2]
        joints, rates = {}, {}
        for jn, parent, _, child, _ in self.joints:
            joints[jn] = ang[child] - (0.0 if parent is None else ang[parent])
            rates[jn] = rate[child] - (0.0 if parent is None else rate[parent])
        return wall, joints, rates


def slider_crank(bodies, r=0.1, l=0.4, mc=1.0, mr=2.0, ms=0.5, g=9.81):
    """bodies: initial [(x, y, phi, vx, vy, omega)] of crank, rod, slider (consistent)."""
    b = [("crank", mc, mc * r * r / 12, bodies[0]), ("rod", mr, mr * l * l / 12, bodies[1]),
         ("slider", ms, 1e-3, bodies[2])]
    joints = [("O", None, (0.0, 0.0), "crank", (-r / 2, 0.0)),
              ("A", "crank", (r / 2, 0.0), "rod", (-l / 2, 0.0)),
              ("B", "rod", (l / 2, 0.0), "slider", (0.0, 0.0))]
    return Planar(b, joints, [("slider", 1), ("slider", 2)], (0.0, -g))


def n_four_bar(n, bodies, g=9.81):
    """bodies: initial states of cranks 0..n, then couplers 0..n-1."""
    L, m = 1.0, 1.0
    b = [(f"crank{i}", m, m * L * L / 12, bodies[i]) for i in range(n + 1)]
    b += [(f"coupler{i}", m, m * L * L / 12, bodies[n + 1 + i]) for i in range(n)]
    joints = [(f"O{i}", None, (float(i), 0.0), f"crank{i}", (-L / 2, 0.0))
              for i in range(n + 1)]
    joints += [(f"L{i}", f"crank{i}", (L / 2, 0.0), f"coupler{i}", (-L / 2, 0.0))
               for i in range(n)]
    joints += [(f"R{i}", f"crank{i + 1}", (L / 2, 0.0), f"coupler{i}", (L / 2, 0.0))
               for i in range(n)]
    return Planar(b, joints, [], (0.0, -g))
