"""Dynamics layer: how a mechanism moves.

The State, the formulations of the equations of motion (newton_euler, tmt, lagrange,
recursive), the integrators with drift control and the event loop for contacts and impacts,
inverse dynamics, the compiled kernel, outputs and simulate(). Imports the mechanics layer and
the base modules, never the FMI layer or the tools.
"""
