"""Engine layer: the compiled multibody engine (C) and its in-process Python host.

native/ holds the C sources: kernel.c (planar trees by the articulated-body algorithm, loop
rows, drives, persistent contact rows) with events.c (its operations for the contact event
loop of event_loop.h: event location, impacts, persistent contacts), spatial_kernel.c (the
same in 3-D, with spatial_events.c: the same loop over the spatial kernel), integrators.h
(the explicit Runge-Kutta integrators with step budget and drift control) and dense.h (the
dense solves of the loop rows). kernel.py and spatial_kernel.py compile them with the system
C compiler and call them through ctypes; tableaus.py holds the Runge-Kutta coefficients.

Layer order: base (errors, units, linalg) <- mechanics (a model and its data) <- engine
<- dynamics (formulations, integrators, simulate) <- fmi (the two kinds of FMU) <- tools.
The engine imports the mechanics layer and the base modules only.
"""
