"""IFToMM benchmark A04, the Bricard mechanism: point P3 from
`fmu-mb simulate models/bricard.py --stop-time 10 --output-interval 0.5` against the reference
of bench/bricard_reference.py, which solves the problem twice without fmu_mb: the one-coordinate
Lagrange equation of the loop (DOP853, rtol 1e-13) and Exudyn's Euler-parameter bodies and
joints (generalized-alpha, Richardson-extrapolated). The two routes agree to 1e-10 m."""
import sys

import numpy as np
import pytest

from fmu_mb.tools.cli import main
from fmu_mb.tools.viz import read_csv

from conftest import MODELS, ROOT

REF = np.genfromtxt(ROOT / "tests" / "data" / "bricard_p3_reference.csv", delimiter=",",
                    names=True, skip_header=1)


def ref_at(t):
    k = int(np.flatnonzero(np.isclose(REF["t"], t))[0])
    return np.array([REF["P3x"][k], REF["P3y"][k], REF["P3z"][k]])


def test_the_two_reference_routes_agree():
    a = np.column_stack([REF["P3x"], REF["P3y"], REF["P3z"]])
    b = np.column_stack([REF["exudynx"], REF["exudyny"], REF["exudynz"]])
    assert np.abs(a - b).max() < 1e-9
    assert np.ptp(a[:, 0]) > 1.0            # P3 really travels (x from 1 to below -0.7)


def test_minimal_coordinate_route_regenerates_the_first_second():
    sys.path.insert(0, str(ROOT / "bench"))
    import bricard_reference as br
    p, *_ = br.minimal_route(rtol=1e-11, atol=1e-12, t_end=1.0)
    np.testing.assert_allclose(p[-1], ref_at(1.0), atol=1e-9)


def test_p3_within_1e_6_m_of_the_reference(tmp_path):
    out = tmp_path / "bricard.csv"
    assert main(["simulate", str(MODELS / "bricard.py"), "--stop-time", "10",
                 "--output-interval", "0.5", "-o", str(out), "--quiet"]) == 0
    r = read_csv(out)
    for t in (1.0, 2.0, 5.0, 10.0):
        k = int(np.flatnonzero(np.isclose(r["time"], t))[0])
        p3 = np.array([r["P3.x"][k], r["P3.y"][k], r["P3.z"][k]])
        err = np.abs(p3 - ref_at(t)).max()
        assert err < 1e-6, f"t = {t}: P3 = {p3}, reference {ref_at(t)}, error {err:.2e} m"
