"""Armature (ModelBuilder.armature) in the kinetic energy: energy.kinetic holds the rotor's
1/2 a qd^2 (closed form for a pendulum: 1/2 (J_pivot + a) qd^2), and energy.total is conserved
along the motion, in process (recursive, tmt) and in the native FMU."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, Settings, simulate

M, L, J, A = 1.2, 0.3, 0.01, 0.05       # mass, pivot to centre of mass, inertia about it, armature


def pendulum(armature=A, qd0=2.0):
    mb = ModelBuilder("rotor", gravity=(0.0, -9.81, 0.0))
    mb.body("arm", mass=M, inertia=(J, J, J), position=(L, 0.0, 0.0))
    mb.revolute("hinge", "ground", "arm", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.armature("hinge", armature)
    mb.initial("hinge", value=0.0, rate=qd0)
    return mb.build()


@pytest.mark.parametrize("form", ["recursive", "tmt"])
def test_kinetic_energy_holds_the_rotor_and_the_total_is_conserved(form):
    r = simulate(pendulum(), 1.0, 0.05, settings=Settings(formulation=form, rtol=1e-11,
                                                          atol=1e-12))
    assert r["energy.kinetic"][0] == pytest.approx(0.5 * (J + M * L * L + A) * 4.0, rel=1e-12)
    assert np.ptp(r["energy.total"]) < 1e-8
    qd = r["hinge.rate"]
    assert np.allclose(r["energy.kinetic"], 0.5 * (J + M * L * L + A) * qd * qd, rtol=1e-10)


@pytest.mark.slow
def test_native_fmu_kinetic_energy_holds_the_rotor(tmp_path):
    from fmpy import simulate_fmu

    from fmu_mb.fmi.native_build import build_native_fmu

    src = tmp_path / "rotor.py"
    src.write_text("from fmu_mb import ModelBuilder\n\n\ndef build(**overrides):\n"
                   "    mb = ModelBuilder('rotor', overrides, gravity=(0.0, -9.81, 0.0))\n"
                   f"    mb.body('arm', mass={M}, inertia=({J}, {J}, {J}), position=({L}, 0, 0))\n"
                   "    mb.revolute('hinge', 'ground', 'arm', at=(0, 0, 0), axis=(0, 0, 1))\n"
                   f"    mb.armature('hinge', {A})\n"
                   "    mb.initial('hinge', value=0.0, rate=2.0)\n"
                   "    return mb.build()\n")
    fmu = build_native_fmu(src, tmp_path, platforms="linux64")
    r = simulate_fmu(str(fmu), stop_time=1.0, output_interval=0.05,
                     start_values={"solver.rtol": 1e-11},
                     output=["energy.kinetic", "energy.total", "hinge.rate"])
    qd = r["hinge.rate"]
    assert np.allclose(r["energy.kinetic"], 0.5 * (J + M * L * L + A) * qd * qd, rtol=1e-9)
    assert np.ptp(r["energy.total"]) < 1e-8
