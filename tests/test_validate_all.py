"""fmpy's validator on the FMI 2.0 and FMI 3.0 FMU of every model in models/.

The FMUs are built once per test session (conftest's `session_fmus`, two builds at a time: the compilers run
in subprocesses), without their win64 binaries (the validator reads modelDescription.xml and
the linux64 binary's exports). A model that runs only in Python gets its Python FMU (FMI 2.0;
FMI 3.0 FMUs are native only).
"""
import concurrent.futures

import pytest

from conftest import MODEL_FILES

fmpy_validation = pytest.importorskip("fmpy.validation", reason="fmpy validates the FMUs")

# builds 43 FMUs (about 5 minutes on 2 idle cores; the FMI tests of tests/test_fmi_statuses.py
# reuse some of them)
pytestmark = [pytest.mark.fmu, pytest.mark.slow]


@pytest.fixture(scope="session")
def all_fmus(session_fmus):
    """{(model name, fmi version): path or None} for every model file and FMI 2.0 and 3.0."""
    jobs = [(f, fmi) for f in MODEL_FILES for fmi in (2, 3)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {(f.stem, fmi): pool.submit(session_fmus, f, fmi) for f, fmi in jobs}
        return {key: fut.result() for key, fut in futures.items()}


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", [f.stem for f in MODEL_FILES])
def test_fmpy_validates_every_fmu_of_models(all_fmus, name, fmi):
    path = all_fmus[(name, fmi)]
    if path is None:
        assert fmi == 3 and (name, 2) in all_fmus
        pytest.skip(f"{name} runs only in Python: its FMU is FMI 2.0")
    assert fmpy_validation.validate_fmu(str(path)) == []
