"""Dynamics layer: how a mechanism moves.

The State, the formulations of the equations of motion (newton_euler, tmt, lagrange,
recursive), the integrators with drift control and the event loop for contacts and impacts,
inverse dynamics, outputs and simulate(). The compiled kernels are the engine layer
(fmu_mb.engine). Imports the mechanics and engine layers and the base modules, never the FMI
layer or the tools.
"""
