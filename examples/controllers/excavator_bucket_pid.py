"""Bucket cylinder controller of the closed-loop digging example (examples/excavator_dig.py):
PID on bucket_pin.angle with the digging path's inverse kinematics as a set-point table and its
inverse-dynamics force as a feed-forward table; output bucket_cyl.h [N]."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build():
    import excavator_dig
    return excavator_dig.controller_spec("bucket")
