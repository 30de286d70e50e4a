"""The C sources compile without warnings: the engine library's (fmu_mb.engine.engine.sources:
engine.c, kernel.c with events.c, spatial_kernel.c with spatial_events.c, params.c) and the
native FMUs' FMI fronts (fmi2_native.c; fmi3_native.c, which includes it and the model
exchange parts), with the compiler and flags the builds use plus -Wall -Wextra -Werror.
At -O0 (a few seconds a file): the warnings -Wall and -Wextra give there (unused functions
and variables, sign compares, missing initializers, format truncation); the checks that need
the optimiser's data flow (-Wmaybe-uninitialized) are clean at -O2 too, measured with
`gcc -O2 -Wall -Wextra -c` on each file."""
import subprocess
from pathlib import Path

import pytest

from fmu_mb.engine import kernel as _kernel
from fmu_mb.engine.engine import sources

CHECK = ["-O0", "-Wall", "-Wextra", "-Werror"]


def _compile(source, defines=(), includes=()):
    cc = _kernel.compiler()
    if cc is None:
        pytest.skip("no C compiler ($CC, cc, gcc, clang) on PATH")
    flags = [f for f in _kernel.CFLAGS if f not in ("-O2", "-shared")] + CHECK
    p = subprocess.run([cc, *flags, *(f"-D{d}" for d in defines),
                        *(f"-I{i}" for i in (*includes, _kernel.NATIVE_DIR)),
                        "-c", str(source), "-o", "/dev/null"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{Path(source).name} with {cc}:\n{p.stderr[-4000:]}"


@pytest.mark.parametrize("name", [p.name for p in sources()])
def test_engine_sources_compile_without_warnings(name):
    source = next(p for p in sources() if p.name == name)
    _compile(source, defines=("MBE_HAVE_PARAMS",) if name == "engine.c" else ())


@pytest.mark.fmu
@pytest.mark.parametrize("front", ["fmi2_native.c", "fmi3_native.c"])
def test_fmi_fronts_compile_without_warnings(front, tmp_path):
    """Against the cached front's fmu_model.h (native_platforms.EXTERN_HEADER: the model's
    tables extern), as a native build compiles them."""
    from fmu_mb.fmi.native_build import NATIVE_DIR
    from fmu_mb.fmi.native_platforms import EXTERN_HEADER

    (tmp_path / "fmu_model.h").write_text(EXTERN_HEADER)
    _compile(NATIVE_DIR / front, includes=(tmp_path,))
