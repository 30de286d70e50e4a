"""Mechanics layer: what a mechanism is.

The model description (Model, ModelBuilder, model files), its topology (spanning tree, cut
joints, Gruebler-Kutzbach count), the kinematic primitives, the constraint rows Phi, D and the
convective terms, the force elements (s, Dv), contact gap geometry, and the assembly of a
consistent initial state. Imports only the base modules (errors, units, linalg): nothing here
knows about time integration or FMI.
"""
