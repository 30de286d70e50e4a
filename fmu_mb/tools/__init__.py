"""Tools layer: the command line (cli.py), plots and animations (viz.py) and parameter sweeps
(sweep.py). The top of the import graph: nothing in the package imports it.
"""
