"""The fmu-mb command line.

    fmu-mb simulate MODEL.py --stop-time T [--output-interval DT] [--set NAME=VALUE ...]
                    [--input NAME=VALUE ...] [--formulation F] [--method M] [-o OUT.csv]
    fmu-mb info MODEL.py [--set NAME=VALUE ...]
    fmu-mb build MODEL.py [MODEL.py ...] -o DIR [--set NAME=VALUE ...] [--platforms P,...]
                 [--verbose]
    fmu-mb build ROBOT.urdf | SCENE.xml -o DIR [--base floating] [--link NAME]
                 [--reactions JOINT | all] [--fmi 3]
    fmu-mb plot OUT.csv [--columns NAME ...] [--model MODEL.py] -o plot.png
    fmu-mb animate MODEL.py OUT.csv -o anim.gif [--every N] [--fps F] [--view V]
                   [--renderer auto|browser|matplotlib] [--size WxH]
    fmu-mb view MODEL.py [OUT.csv] -o out/NAME.html [--columns NAME ...] [--traces POINT ...]
    fmu-mb linearize MODEL.py [--set NAME=VALUE ...] [--input NAME=VALUE ...] [--equilibrium]
                     [-o lin.npz]
    fmu-mb sweep MODEL.fmu --param NAME=start:stop:count [--param ...] --stop-time T
                 [--output-interval DT] [--outputs NAME ...] [--scheduler ADDRESS]
                 [--workers N] [-o table.csv]

Bad arguments (including a --set or --input name the model does not have) print one line
"fmu-mb: error: ..." and exit with status 2; a model or solver error exits with status 1.
"""
import argparse
import contextlib
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..errors import FmuMbError, ModelError
from ..mechanics.builder import UnknownParameterError
from ..dynamics.formulations import CHOICES
from ..dynamics.implicit import DAE_FORMS
from ..dynamics.integrate import METHODS, STABILIZATIONS


def _assignment(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, received {text!r}")
    name, value = text.split("=", 1)
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, received {text!r}")
    return name.strip(), value.strip()


def _value(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _positive(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, received {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, received {text!r}")
    return v


def _sweep_param(text):
    from .sweep import parse_param

    try:
        return parse_param(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--param: ")) from None


def _workers(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, received {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, received {text!r}")
    return n


def _robot_options(parser):
    """Options of a robot description (.urdf, MJCF .xml): fmu_mb.importers, docs/import.md."""
    g = parser.add_argument_group("robot descriptions (.urdf, MJCF .xml; docs/import.md)")
    g.add_argument("--base", choices=("fixed", "floating"), default="fixed",
                   help="the root link welded to the ground (default) or a free body")
    g.add_argument("--fixed-joints", choices=("merge", "weld"), default="merge",
                   dest="fixed_joints",
                   help="links joined by fixed joints: one composite body (default) or "
                        "bodies welded together (the same motion)")
    g.add_argument("--no-limits", action="store_true",
                   help="no joint-limit contacts (default: the file's limits)")
    g.add_argument("--link", action="append", default=[], metavar="NAME",
                   help="a link whose origin becomes the marker NAME_origin (outputs .x .y "
                        ".z .vx .vy .vz); repeatable")
    g.add_argument("--reactions", action="append", default=[], metavar="JOINT",
                   help="a joint whose reactions (.fx .fy .fz .tx .ty .tz) the FMU outputs; "
                        "repeatable; 'all': every joint's (default: none)")
    g.add_argument("--payload-link", default=None, metavar="NAME",
                   help="the link carrying the parameter 'payload' [kg] at its origin")
    g.add_argument("--actuators", choices=("file", "joints"), default=None,
                   help="MJCF: the file's motors as inputs (default), or a torque input on "
                        "every hinge and slide joint instead of the file's actuators")


def _reactions(names):
    """--reactions as build_robot's reactions: True for 'all', else the joint names."""
    return True if list(names) == ["all"] else tuple(names)


def robot_options(args):
    """The importer's options given on the command line (defaults where a parser has none)."""
    return {"base": getattr(args, "base", "fixed"),
            "fixed": getattr(args, "fixed_joints", "merge"),
            "limits": not getattr(args, "no_limits", False),
            "links": tuple(getattr(args, "link", ()) or ()),
            "payload_link": getattr(args, "payload_link", None),
            "reactions": _reactions(getattr(args, "reactions", ()) or ()),
            **({"actuators": args.actuators} if getattr(args, "actuators", None) else {})}


def _parser():
    p = argparse.ArgumentParser(prog="fmu-mb", description="Planar and spatial multibody models as FMI 2.0 and 3.0 FMUs.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("simulate", help="simulate a model file and write its outputs as CSV")
    s.add_argument("model", help="model file (defines build(**overrides)), URDF or MJCF")
    s.add_argument("--stop-time", type=_positive, required=True, help="end time [s]")
    s.add_argument("--output-interval", type=_positive, default=None,
                   help="output (communication) interval [s]")
    s.add_argument("--set", type=_assignment, action="append", default=[],
                   metavar="NAME=VALUE", help="parameter value")
    s.add_argument("--input", type=_assignment, action="append", default=[],
                   metavar="NAME=VALUE", help="constant input value")
    s.add_argument("--formulation", default="auto", choices=CHOICES)
    s.add_argument("--method", default="auto", choices=METHODS)
    s.add_argument("--stabilization", default="projection", choices=STABILIZATIONS)
    s.add_argument("--rtol", type=_positive, default=1e-9)
    s.add_argument("--atol", type=_positive, default=1e-11)
    s.add_argument("--step", type=_positive, default=1e-3,
                   help="fixed step of rk4, euler, generalized_alpha, trapezoidal [s]")
    s.add_argument("--rho-inf", type=float, default=0.9,
                   help="spectral radius of generalized_alpha at large steps, in [0, 1]")
    s.add_argument("--newton-tol", type=_positive, default=1e-10,
                   help="Newton tolerance of the implicit methods (relative)")
    s.add_argument("--dae-form", default="auto", choices=DAE_FORMS,
                   help="constraint rows of the implicit methods")
    s.add_argument("--contact-tol", type=_positive, default=1e-9,
                   help="contact event loop: a gap at or below it counts as closed at an "
                        "impact [m or rad]")
    s.add_argument("--contact-velocity", type=_positive, default=1e-3,
                   help="contact event loop: a rebound below it becomes a persistent contact "
                        "[m/s or rad/s]")
    s.add_argument("--event-tol", type=_positive, default=1e-15,
                   help="contact event loop: time tolerance of the event location [s]")
    s.add_argument("-o", "--output", default=None, help="CSV file (default: stdout)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    _robot_options(s)

    i = sub.add_parser("info", help="list parameters, inputs, outputs and topology")
    i.add_argument("model")
    i.add_argument("--set", type=_assignment, action="append", default=[],
                   metavar="NAME=VALUE")
    _robot_options(i)

    pl = sub.add_parser("plot", help="plot outputs of a CSV result over time")
    pl.add_argument("csv", help="CSV written by fmu-mb simulate or the main job")
    pl.add_argument("--columns", nargs="+", default=None,
                    help="columns to plot (default: the first three coordinates and energy)")
    pl.add_argument("-o", "--output", default="plot.png")
    pl.add_argument("--model", default=None,
                    help="model file of the result: its output units label the axes "
                         "(without it, units are taken from the column names)")
    pl.add_argument("--set", type=_assignment, action="append", default=[],
                    metavar="NAME=VALUE", help="parameters of --model")

    an = sub.add_parser("animate", help="animate a mechanism from a CSV result (GIF of the 3-D "
                                        "scene of fmu-mb view, or line drawings)")
    an.add_argument("model", help="model file of the result")
    an.add_argument("csv", help="CSV with the model's body coordinates")
    an.add_argument("--set", type=_assignment, action="append", default=[],
                    metavar="NAME=VALUE", help="parameter value used for the result")
    an.add_argument("-o", "--output", default="anim.gif", help=".gif (or .mp4 with ffmpeg)")
    an.add_argument("--every", type=int, default=1, help="draw every N-th row")
    an.add_argument("--fps", type=_positive, default=25.0)
    an.add_argument("--view", default="iso",
                    help="spatial models: seen from iso, front, side, top, or AZ,EL in "
                         "degrees (azimuth about the up axis, elevation)")
    an.add_argument("--renderer", choices=("auto", "browser", "matplotlib"), default="auto",
                    help="browser: the 3-D scene of fmu-mb view in headless Chromium; "
                         "matplotlib: line drawings; auto (default): the browser where "
                         "Chromium is found, else matplotlib")
    an.add_argument("--size", type=_size, default=(640, 480), metavar="WxH",
                    help="picture size of the browser renderer [pixels]")
    an.add_argument("--quiet", action="store_true", help="no progress bar")

    vw = sub.add_parser("view", help="interactive 3-D viewer of a model (and a result) in one "
                                     "self-contained HTML file")
    vw.add_argument("model", help="model file")
    vw.add_argument("csv", nargs="?", default=None,
                    help="CSV result of the model (fmu-mb simulate); without it: the start pose")
    vw.add_argument("--set", type=_assignment, action="append", default=[],
                    metavar="NAME=VALUE", help="parameter value used for the result")
    vw.add_argument("-o", "--output", default=None, help="HTML file (default: out/MODEL.html)")
    vw.add_argument("--columns", nargs="+", default=None, metavar="NAME",
                    help="outputs of the linked plot (default: joint coordinates and energy)")
    vw.add_argument("--traces", nargs="*", default=None, metavar="POINT",
                    help="named points whose paths are drawn (default: all)")
    vw.add_argument("--max-frames", type=int, default=1500,
                    help="the result is decimated to at most this many frames")

    b = sub.add_parser("build", help="build FMUs of model files (FMI 2.0, or 3.0 with --fmi 3)")
    b.add_argument("models", nargs="+", help="model files (.py), URDF (.urdf) or MJCF (.xml) "
                                             "robot descriptions")
    b.add_argument("-o", "--output-dir", default=".", help="folder of the .fmu files")
    b.add_argument("--set", type=_assignment, action="append", default=[],
                   metavar="NAME=VALUE",
                   help="parameter value fixed at build time (structural parameters)")
    b.add_argument("--no-standalone", action="store_true",
                   help="skip the native shim that lets C/C++ hosts load the FMU")
    kind = b.add_mutually_exclusive_group()
    kind.add_argument("--native", action="store_const", const="native", dest="kind",
                      help="a native FMU: the compiled engine, no Python on the host (default "
                           "whenever the model runs in the compiled engine)")
    kind.add_argument("--python", action="store_const", const="python", dest="kind",
                      help="a Python FMU (pythonfmu): every formulation and method")
    b.add_argument("--fmi", choices=("2", "3"), default="2",
                   help="FMI version: 2 (default; native or Python FMU) or 3 (native FMU only: "
                        "FMI 3.0 co-simulation)")
    b.add_argument("--platforms", default=None, metavar="P,...",
                   help="native FMUs: the binaries to build, comma-separated (default: every "
                        "one a toolchain builds; FMI 2.0: linux64, aarch64-linux, win64, "
                        "darwin64; FMI 3.0: x86_64-linux, aarch64-linux, x86_64-windows, "
                        "x86_64-darwin, aarch64-darwin); see docs/platforms.md")
    b.add_argument("--verbose", action="store_true",
                   help="print the time of each build stage (wall and CPU)")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    _robot_options(b)

    sw = sub.add_parser("sweep", help="run a grid of parameter variants of an FMU on Dask")
    sw.add_argument("fmu", help="FMU built by fmu-mb build")
    sw.add_argument("--param", type=_sweep_param, action="append", required=True,
                    metavar="NAME=start:stop:count",
                    help="parameter values linspace(start, stop, count); the grid is the "
                         "cartesian product of all --param")
    sw.add_argument("--stop-time", type=_positive, required=True, help="end time [s]")
    sw.add_argument("--output-interval", type=_positive, default=None,
                    help="communication interval [s] (default: fmpy's)")
    sw.add_argument("--outputs", nargs="+", default=None, metavar="NAME",
                    help="outputs whose final values go into the table (default: all)")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="address of an existing Dask scheduler (default: a local cluster)")
    sw.add_argument("--workers", type=_workers, default=None,
                    help="worker processes of the local cluster (default: CPU count)")
    sw.add_argument("-o", "--output", default=None, help="CSV table (default: stdout)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    from .linearize_cmd import add_parser as _add_linearize
    _add_linearize(sub, _assignment)
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "info":
            return _info(args)
        if args.command == "build":
            return _build(args)
        if args.command == "plot":
            return _plot(args)
        if args.command == "animate":
            return _animate(args)
        if args.command == "view":
            return _view(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "linearize":
            from .linearize_cmd import run
            return run(args, _load)
    except UnknownParameterError as exc:     # a --set name the model does not have
        print(f"fmu-mb: error: {exc}", file=sys.stderr)
        return 2
    except FmuMbError as exc:
        print(f"fmu-mb: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, RuntimeError) as exc:   # PackagingError is a RuntimeError
        print(f"fmu-mb: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _load(args):
    from ..importers import is_robot_file, load
    from ..mechanics.loader import load_model

    overrides = {k: _value(v) for k, v in args.set}
    if is_robot_file(args.model):
        return load(args.model, overrides, **robot_options(args))
    return load_model(args.model, **overrides)


def _simulate(args):
    from ..dynamics.integrate import Settings
    from ..dynamics.simulate import simulate

    model = _load(args)
    settings = Settings(method=args.method, formulation=args.formulation, rtol=args.rtol,
                        atol=args.atol, step=args.step, stabilization=args.stabilization,
                        rho_inf=args.rho_inf, newton_tol=args.newton_tol,
                        dae_form=args.dae_form, contact_tol=args.contact_tol,
                        contact_velocity=args.contact_velocity, event_tol=args.event_tol)
    inputs = {}
    for name, value in args.input:
        try:
            inputs[name] = float(value)
        except ValueError:
            print(f"fmu-mb: error: --input {name}: expected a number, received {value!r}",
                  file=sys.stderr)
            return 2
    unknown = [name for name in inputs if name not in [i.name for i in model.inputs]]
    if unknown:
        print(f"fmu-mb: error: --input: unknown input(s) {unknown}; the inputs of model "
              f"'{model.name}' are {[i.name for i in model.inputs]}", file=sys.stderr)
        return 2
    data = simulate(model, args.stop_time, args.output_interval, inputs=inputs,
                    settings=settings, progress=not args.quiet)
    out = open(_folder(args.output), "w", newline="") if args.output else sys.stdout
    try:
        out.write(",".join(data.dtype.names) + "\n")
        np.savetxt(out, data.view((float, len(data.dtype.names))), delimiter=",", fmt="%.17g")
    finally:
        if args.output:
            out.close()
    return 0


def _info(args):
    from ..dynamics.formulations import describe_choice
    from ..dynamics.outputs import declared_outputs

    m = _load(args)
    t = m.topology
    lines = [f"model {m.name}: {_summary(m.description)}", "", "parameters:"]
    for p in m.parameters:
        extra = f" (one of {list(p.choices)})" if p.choices else ""
        extra += " (structural)" if p.structural else ""
        lines.append(f"  {p.name} = {p.value!r} [{p.unit}]  {p.description}{extra}")
    lines += ["", "inputs:"] + [f"  {i.name} [{i.unit}]  {i.description}" for i in m.inputs]
    if not m.inputs:
        lines.append("  (none)")
    lines += ["", "outputs:"]
    lines += [f"  {v.name} [{v.unit}]  {v.description}" for _, v in declared_outputs(m)]
    if m.undeclared_outputs:
        lines.append(f"  ({len(m.undeclared_outputs)} joint reaction outputs not declared by "
                     f"its FMU: --reactions JOINT or all declares them)")
    kind = ("spatial: f = 6 n_B - sum(6 - f_G); rows include one Euler-parameter "
            "normalisation per body" if m.spatial else "planar: f = 3 n_B - sum(3 - f_G)")
    lines += ["", f"topology ({kind}):",
              f"  bodies n_B = {t.n_bodies}, joints n_G = {t.n_joints}, loops n_L = {t.n_loops}",
              f"  Gruebler-Kutzbach DOF = {t.gruebler_dof}, DOF from rank(D) = {t.dof}, "
              f"constraints = {t.n_constraints}, redundant = {t.redundant}",
              f"  tree joints: {list(t.tree_joints)}",
              f"  cut joints: {list(t.cut_joints)}"]
    for cut, loop in zip(t.cut_joints, t.loops):
        lines.append(f"  loop closed by {cut}: {' - '.join(loop)}")
    lines += ["", "initial joint coordinates (assembled; the start the assembly was given):"]
    lines += _initial_lines(m)
    lines += ["", "solver:", f"  {describe_choice(m)}"]
    print("\n".join(lines))
    return 0


def _initial_lines(m):
    """Per joint with a coordinate: the assembled value beside the given or declared start."""
    import numpy as np

    from ..mechanics import constraints
    from ..mechanics.assembly import declared_coordinates

    if m.spatial:
        return ["  (spatial: the declared body poses are the reference pose, coordinates 0)"]
    q, _, _, _ = constraints.joint_coordinates(m, np.asarray(m.x0), np.zeros_like(m.x0))
    start = declared_coordinates(m)
    lines = []
    for i, k in enumerate(m.compiled.coord_joints):
        j = m.joints[k]
        unit = "rad" if j.kind == "revolute" else "m"
        what, value = start.get(j.name, ("closed by its loop", None))
        given = "" if value is None else f"{value:.6g} {unit} "
        lines.append(f"  {j.name} = {q[i]:.6g} {unit}  (start: {given}{what})")
    return lines or ["  (none)"]


def _folder(path):
    """`path`, its folder created when missing (the README's examples write under out/)."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path


def _summary(text):
    """The first paragraph of a model's description on one line (a docstring's first line
    may end mid-sentence)."""
    paragraph = (text or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def _plot(args):
    from .viz import plot_outputs, read_csv

    data = read_csv(args.csv)
    cols = args.columns
    if not cols:
        names = data.dtype.names[1:]
        cols = [n for n in names if n.endswith((".phi", ".angle", ".position"))][:3]
        if not cols:          # no joint coordinates (e.g. only distance links): positions
            cols = [n for n in names if n.endswith(".z")][:3] or list(names[:3])
        cols += [n for n in ("energy.total",) if n in names]
    model = _load(args) if args.model else None
    plot_outputs(data, cols, _folder(args.output), title=str(args.csv), model=model)
    print(args.output)
    return 0


def _size(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 640x480, "
                                         f"received {text!r}") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise argparse.ArgumentTypeError(f"width and height must lie in [16, 4096], "
                                         f"received {text!r}")
    return w, h


def _animate(args):
    from .viz import animate, read_csv

    model = _load(args)
    data = read_csv(args.csv)
    renderer = args.renderer
    if renderer != "matplotlib":
        from .browser import find_browser

        if find_browser() is None:
            if renderer == "browser":
                print("fmu-mb: error: --renderer browser: no Chromium found (apt-get install "
                      "chromium, or set FMU_MB_BROWSER)", file=sys.stderr)
                return 1
            renderer = "matplotlib"
    if renderer != "matplotlib":
        from .browser import BrowserError
        from .view import animate as animate3d

        try:
            n = animate3d(model, data, _folder(args.output), every=args.every, fps=args.fps,
                          size=args.size, progress=not args.quiet, view=args.view)
            print(f"{args.output}: {n} frames (3-D scene, headless Chromium)")
            return 0
        except (BrowserError, OSError) as exc:     # the browser, not the data, failed
            if args.renderer == "browser":
                raise
            print(f"fmu-mb: the browser renderer failed ({exc}); drawing with matplotlib",
                  file=sys.stderr)
    n = animate(model, data, _folder(args.output), every=args.every, fps=args.fps,
                progress=not args.quiet, view=args.view)
    print(f"{args.output}: {n} frames")
    return 0


@contextlib.contextmanager
def _warnings_once():
    """Show each distinct warning (category and text) once within the block: building an FMU
    runs the model's build() more than once (the model, its data, the parameter program), and
    every warnings.catch_warnings on the way resets Python's record of the warnings shown."""
    seen, show = set(), warnings.showwarning

    def once(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key not in seen:
            seen.add(key)
            show(message, category, filename, lineno, file, line)
    warnings.showwarning = once
    try:
        yield
    finally:
        warnings.showwarning = show


def _view(args):
    from .view import view

    if args.max_frames < 2:
        print(f"fmu-mb: error: --max-frames must be >= 2, received {args.max_frames}",
              file=sys.stderr)
        return 2
    model = _load(args)
    path = view(model, args.csv, args.output, max_frames=args.max_frames,
                columns=args.columns, traces=args.traces)
    print(path)
    return 0


def _build(args):
    with _warnings_once():
        return _build_models(args)


def _build_models(args):
    try:
        from ..fmi.build import build_controller_fmu, is_controller_file
        from ..fmi.native_build import build_model_fmu
    except ImportError as exc:
        print(f"fmu-mb: error: building FMUs needs pythonfmu (pip install 'fmu_mb[fmu]'): "
              f"{exc}", file=sys.stderr)
        return 1
    from ..dynamics.simulate import _Progress
    from ..fmi.native_platforms import BuildLog, parse_platforms
    from ..importers import is_robot_file, model_file

    overrides = {k: _value(v) for k, v in args.set}
    if args.platforms is not None:
        try:
            parse_platforms(args.platforms, int(args.fmi))
        except FmuMbError as exc:
            print(f"fmu-mb: error: {exc}", file=sys.stderr)
            return 2
    bar = None if args.quiet or args.verbose else _Progress(len(args.models))
    robots = tempfile.TemporaryDirectory(prefix="fmu_mb_robots_")
    for k, model in enumerate(args.models):
        note = None
        log = BuildLog()
        if is_robot_file(model):           # its model file: the description as data
            if not Path(model).is_file():
                raise ModelError(f"robot file {model!r} does not exist")
            folder = Path(robots.name) / str(k)
            folder.mkdir()
            model = model_file(model, folder, **robot_options(args))
        if isinstance(model, str) and is_controller_file(model):   # a ControllerSpec
            if args.fmi != "2":
                print(f"fmu-mb: error: {model}: a controller FMU is a Python FMU (FMI 2.0 "
                      f"only); build it without --fmi {args.fmi}", file=sys.stderr)
                return 1
            path = build_controller_fmu(model, args.output_dir,
                                        standalone=not args.no_standalone)
            if args.kind == "native":
                note = f"fmu-mb: {path.name}: python FMU (a controller: no native kind yet)"
        elif args.fmi == "3":
            from ..fmi.native_fmi3 import build_model_fmu3
            path, kind, why = build_model_fmu3(model, args.output_dir, overrides, kind=args.kind,
                                               platforms=args.platforms, log=log)
            note = f"fmu-mb: {path.name}: {kind} FMU ({why})"
        else:
            path, kind, why = build_model_fmu(model, args.output_dir, overrides,
                                              standalone=not args.no_standalone, kind=args.kind,
                                              platforms=args.platforms, log=log)
            note = f"fmu-mb: {path.name}: {kind} FMU ({why})"
        if args.verbose and log.stages:
            note = (note or f"fmu-mb: {path.name}") + "\n" + log.table()
        if bar and bar.shown:
            sys.stderr.write("\r\033[K")     # the path on a clean line, the bar below it
        print(path, flush=True)
        if note:
            print(note, file=sys.stderr, flush=True)
        if bar:
            bar.update(k + 1)
    if bar:
        bar.close()
    return 0


def _sweep(args):
    try:
        from .sweep import sweep, write_table
        import dask.distributed  # noqa: F401
    except ImportError as exc:
        print(f"fmu-mb: error: sweeps need dask.distributed (pip install 'fmu_mb[sweep]'): "
              f"{exc}", file=sys.stderr)
        return 1
    params = {}
    for name, values in args.param:
        if name in params:
            print(f"fmu-mb: error: --param {name} given twice", file=sys.stderr)
            return 2
        params[name] = values
    columns, rows = sweep(args.fmu, params, args.stop_time, args.output_interval,
                          args.outputs, scheduler=args.scheduler, workers=args.workers,
                          progress=not args.quiet)
    write_table(columns, rows, _folder(args.output) if args.output else sys.stdout)
    failed = sum(r["status"] != "ok" for r in rows)
    if args.output:
        print(f"{args.output}: {len(rows)} variants, {failed} failed")
    elif failed:
        print(f"fmu-mb: {failed} of {len(rows)} variants failed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
