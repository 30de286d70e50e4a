"""Slider-crank speed controller: crank torque drive.h from a PI(D) on the crank rate O.rate,
set-point 15 rad/s, torque limited to +-30 N.m (the start from 10 rad/s saturates, so the
back-calculation anti-windup, kaw = ki/kp, matters). Tuned for the example's horizontal
slider-crank (g = 0) with a 20 kg crank acting as a flywheel; sampled at 10 ms."""
from fmu_mb.fmi.controller import pid


def build():
    return pid("slider_crank_pid", kp=4.0, ki=40.0, kd=0.0, setpoint=15.0, u_min=-30.0,
               u_max=30.0, anti_windup="back_calculation", kaw=10.0,
               measurement_unit="rad/s", output_unit="N.m",
               description="crank speed PI for models/slider_crank.py",
               experiment={"stop_time": 3.0, "step_size": 0.01})
