"""Cart-pole balancing controller: push force = clamp(position PD + angle PD), i.e. full state
feedback written as two PD channels. Gains from an LQR design on the cart-pole linearised
upright (cart 1 kg, pole 0.2 kg, 1 m; Q = diag(10, 100, 1, 10) on (x, theta, xd, thetad),
R = 0.1): u = 10 (x - r) + 12.91 xd - 88.63 phi - 23.41 phid with phi = pivot.angle
(counter-clockwise). The positive feedback on the cart position is the non-minimum-phase
cart-pole: the cart first moves away from the target to tilt the pole towards it."""
from fmu_mb.fmi.controller import channel, controller


def build():
    return controller(
        "cart_pole_pid",
        [channel("position", kp=-10.0, kd=-12.91, Tf=0.01, setpoint=1.0, measurement_unit="m"),
         channel("angle", kp=88.63, kd=23.41, Tf=0.01, setpoint=0.0, measurement_unit="rad")],
        u_min=-50.0, u_max=50.0, output_unit="N",
        description="balances examples/models/cart_pole.py and moves the cart to 1 m",
        experiment={"stop_time": 8.0, "step_size": 0.01})
