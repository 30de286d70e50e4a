"""Container-crane controller: cart force Q_x = clamp(position PD + sway PD).

Gains from an LQR design on the crane linearised about the hanging load (cart 100 kg, load
1000 kg, rope 5 m; Q = diag(1e3, 1e5, 1, 1e3) on (x, phi, xd, phid), R = 1e-3):
u = -1000 (x - r) - 1626 xd + 2180 phi - 5268 phid. The position channel measures the cart
position x.position (set-point = target), the sway channel the rope angle phi.angle (set-point
0; a negative kp because the cart has to move under the load).
"""
from fmu_mb.fmi.controller import channel, controller


def build():
    return controller(
        "crane_pid",
        [channel("position", kp=1000.0, ki=0.0, kd=1626.0, Tf=0.02, setpoint=2.0,
                 measurement_unit="m"),
         channel("sway", kp=-2180.0, ki=0.0, kd=5268.0, Tf=0.02, setpoint=0.0,
                 measurement_unit="rad")],
        u_min=-3000.0, u_max=3000.0, output_unit="N",
        description="cart position + load sway controller for models/container_crane.py",
        experiment={"stop_time": 20.0, "step_size": 0.01})
