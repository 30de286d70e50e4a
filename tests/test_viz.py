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
