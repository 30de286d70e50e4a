"""fmu-mb plot and animate: files are written, frames counted, bad input named."""
import numpy as np
import pytest

pytest.importorskip("matplotlib")

from fmu_mb.tools.cli import main  # noqa: E402

from conftest import MODELS  # noqa: E402


@pytest.fixture
def result_csv(tmp_path):
    out = tmp_path / "sc.csv"
    assert main(["simulate", str(MODELS / "slider_crank.py"), "--stop-time", "0.3",
                 "--output-interval", "0.01", "-o", str(out), "--quiet"]) == 0
    return out


@pytest.mark.parametrize("every,frames", [(1, 31), (3, 11)])
def test_animation_has_the_expected_number_of_frames(result_csv, tmp_path, every, frames):
    from PIL import Image
    gif = tmp_path / "sc.gif"
    assert main(["animate", str(MODELS / "slider_crank.py"), str(result_csv), "-o", str(gif),
                 "--every", str(every)]) == 0
    with Image.open(gif) as im:
        assert im.n_frames == frames


def test_animation_draws_the_bodies_where_the_result_puts_them(result_csv):
    """The crank's drawn line ends at the joint A computed from the CSV columns."""
    from fmu_mb import load_model
    from fmu_mb.tools.viz import _world, attachment_points, read_csv
    m = load_model(MODELS / "slider_crank.py")
    data = read_csv(result_csv)
    pts = attachment_points(m)
    assert (0.05, 0.0) in pts["crank"]      # A on the crank (crank_length / 2)
    k = 17
    a = _world(data, k, "crank", (0.05, 0.0))
    r = m.parameter("crank_length").value
    phi = data["O.angle"][k]
    np.testing.assert_allclose(a, [r * np.cos(phi), r * np.sin(phi)], atol=1e-12)


def test_plot_writes_a_file_and_names_unknown_columns(result_csv, tmp_path, capsys):
    png = tmp_path / "p.png"
    assert main(["plot", str(result_csv), "-o", str(png)]) == 0
    assert png.stat().st_size > 1000
    assert main(["plot", str(result_csv), "--columns", "crank.phi", "nope", "-o",
                 str(png)]) == 1
    assert "unknown column(s) ['nope']" in capsys.readouterr().err


def test_animation_of_the_wrong_model_is_refused(result_csv, tmp_path, capsys):
    assert main(["animate", str(MODELS / "double_pendulum.py"), str(result_csv), "-o",
                 str(tmp_path / "x.gif")]) == 1
    assert "lacks the body coordinates" in capsys.readouterr().err


# ---------------------------------------------------------------- spatial models
@pytest.fixture
def bricard_csv(tmp_path):
    out = tmp_path / "br.csv"
    assert main(["simulate", str(MODELS / "bricard.py"), "--stop-time", "0.4",
                 "--output-interval", "0.05", "-o", str(out), "--quiet"]) == 0
    return out


@pytest.mark.parametrize("view", ["iso", "top", "30,20"])
def test_spatial_animation_has_the_expected_number_of_frames(bricard_csv, tmp_path, view):
    from PIL import Image
    gif = tmp_path / "br.gif"
    assert main(["animate", str(MODELS / "bricard.py"), str(bricard_csv), "-o", str(gif),
                 "--view", view, "--every", "2"]) == 0
    with Image.open(gif) as im:
        assert im.n_frames == 5


def test_spatial_drawing_puts_the_joints_where_the_outputs_put_them(bricard_csv):
    """The drawn joint J3 is the marker P3 of the result, and the rods stay 1 m long."""
    from fmu_mb import load_model
    from fmu_mb.tools.viz import read_csv, spatial_frame
    m = load_model(MODELS / "bricard.py")
    data = read_csv(bricard_csv)
    k = 6
    d = spatial_frame(m, data, k)
    j3 = d["joints"][[j.name for j in m.joints].index("J3")]
    np.testing.assert_allclose(j3, [data[f"P3.{c}"][k] for c in "xyz"], atol=1e-12)
    pts = np.array([p for p in d["bodies"]["rod2"] if np.all(np.isfinite(p))])
    ends = pts[1:][np.abs(np.linalg.norm(pts[1:] - pts[0], axis=1) - 0.5) < 1e-9]
    assert len(ends) >= 2 and np.linalg.norm(ends[0] - ends[1]) == pytest.approx(1.0, abs=1e-9)


def test_projection_is_orthographic_with_up_against_gravity():
    from fmu_mb import load_model
    from fmu_mb.tools.viz import projection
    m = load_model(MODELS / "bricard.py")                     # gravity along -y
    P = projection(m, "front")
    np.testing.assert_allclose(P @ P.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(P[1], [0.0, 1.0, 0.0], atol=1e-12)   # screen up = +y
    P = projection(m, "top")                                  # looking down -y
    np.testing.assert_allclose(np.abs(np.cross(P[0], P[1])), [0.0, 1.0, 0.0], atol=1e-12)
    iso = projection(m, "iso")
    np.testing.assert_allclose(np.abs(np.cross(iso[0], iso[1])),
                               np.full(3, 1 / np.sqrt(3)), atol=1e-4)


@pytest.mark.parametrize("view", ["sideways", "10", "0,100", "nan,3"])
def test_bad_view_is_named(bricard_csv, tmp_path, capsys, view):
    assert main(["animate", str(MODELS / "bricard.py"), str(bricard_csv), "-o",
                 str(tmp_path / "x.gif"), "--view", view]) == 1
    assert "view" in capsys.readouterr().err


def test_info_and_plot_work_for_spatial_models(bricard_csv, tmp_path, capsys):
    assert main(["info", str(MODELS / "bricard.py")]) == 0
    out = capsys.readouterr().out
    assert "Gruebler-Kutzbach DOF = 0, DOF from rank(D) = 1" in out and "P3.z [m]" in out
    png = tmp_path / "p.png"
    assert main(["plot", str(bricard_csv), "-o", str(png)]) == 0
    assert png.stat().st_size > 1000
