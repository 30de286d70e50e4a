"""`fmu-mb linearize`: the linear model of a model file at an operating point.

    fmu-mb linearize MODEL.py [--set NAME=VALUE ...] [--input NAME=VALUE ...]
                     [--state COORD=VALUE ...] [--equilibrium [--free NAME ...]]
                     [--outputs NAME ...] [--method ridders|central] [-o lin.npz|lin.mat ...]

Prints the operating point (and the equilibrium's residual), then one line per mode: undamped
natural frequency [Hz], damping ratio, eigenvalue and the coordinates that dominate its
shape. -o writes A, B, C, D, x_names, u_names, y_names, the operating point (x0, u0, y0, t0)
and the eigenvalues: .npz (numpy.load) or .mat (MATLAB, via scipy.io); give -o twice for both.
"""
import sys


def add_parser(sub, assignment):
    """The `linearize` subcommand on the subparsers `sub` of fmu_mb.tools.cli."""
    lp = sub.add_parser("linearize", help="linear model (A, B, C, D) and modes at an "
                                          "operating point")
    lp.add_argument("model", help="model file (defines build(**overrides))")
    lp.add_argument("--set", type=assignment, action="append", default=[],
                    metavar="NAME=VALUE", help="parameter value")
    lp.add_argument("--input", type=assignment, action="append", default=[],
                    metavar="NAME=VALUE", help="input value at the operating point")
    lp.add_argument("--state", type=assignment, action="append", default=[],
                    metavar="COORD=VALUE",
                    help="joint coordinate or rate at the operating point (others: the "
                         "model's initial state, loops closed again)")
    lp.add_argument("--equilibrium", action="store_true",
                    help="linearize at the static equilibrium found from that state")
    lp.add_argument("--free", action="append", default=[], metavar="NAME",
                    help="with --equilibrium: an input to solve for (trim), or a coordinate "
                         "to hold at its value by the input acting on it most")
    lp.add_argument("--outputs", nargs="+", default=None, metavar="NAME",
                    help="outputs y (default: every real output)")
    lp.add_argument("--method", default="ridders", choices=("ridders", "central"),
                    help="derivatives: Richardson-extrapolated (default) or plain central "
                         "differences")
    lp.add_argument("-o", "--output", action="append", default=[],
                    help=".npz or .mat file of the matrices (repeat for both)")
    return lp


def _numbers(pairs, what):
    out = {}
    for name, value in pairs:
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"--{what} {name}: expected a number, received {value!r}") from None
    return out


def run(args, load):
    """Run the command for parsed `args`; `load(args)` loads the model with --set."""
    from ..dynamics.linearize import equilibrium, linearize

    try:
        inputs = _numbers(args.input, "input")
        state = _numbers(args.state, "state") or None
    except ValueError as exc:
        print(f"fmu-mb: error: {exc}", file=sys.stderr)
        return 2
    for path in args.output:
        if not str(path).endswith((".npz", ".mat")):
            print(f"fmu-mb: error: -o {path}: expected a .npz or .mat file", file=sys.stderr)
            return 2
    if args.free and not args.equilibrium:
        print("fmu-mb: error: --free needs --equilibrium", file=sys.stderr)
        return 2
    model = load(args)
    lines = [f"model {model.name}"]
    point = state
    if args.equilibrium:
        eq = equilibrium(model, inputs, free=args.free or None, state=state)
        point, inputs = eq, eq.u
        lines.append(f"static equilibrium ({eq.iterations} Newton iterations): generalised "
                     f"force residual {eq.residual:.3g}, statics residual |D' lam - f| "
                     f"{eq.static_residual:.3g}")
        lines.append("  " + ", ".join(f"{k} = {v:.10g}" for k, v in eq.coordinates.items()))
        if model.input_names:
            lines.append("  inputs: " + ", ".join(f"{k} = {v:.10g}"
                                                  for k, v in eq.inputs.items()))
    lin = linearize(model, point, inputs, outputs=args.outputs, method=args.method)
    lines.append(f"operating point t = {lin.state.t:g} s: "
                 + ", ".join(f"{k} = {v:.10g}" for k, v in zip(lin.x_names, lin.x0)))
    if lin.dependent:
        lines.append(f"independent coordinates {list(lin.independent)} (dependent: "
                     f"{list(lin.dependent)}, coordinate partitioning)")
    err = "" if lin.method == "central" else f", estimated error {lin.error:.2g}"
    lines.append(f"A {lin.A.shape}, B {lin.B.shape}, C {lin.C.shape}, D {lin.D.shape} "
                 f"({lin.method}{err})")
    lines.append("")
    lines.append(f"{'mode':>4s} {'frequency [Hz]':>14s} {'damping ratio':>14s} "
                 f"{'eigenvalue [1/s]':>30s}  dominant coordinates")
    for k, m in enumerate(lin.modes(), 1):
        lam = m.eigenvalue
        z = "nan" if m.damping != m.damping else f"{m.damping:.6g}"
        lines.append(f"{k:4d} {m.frequency:14.9g} {z:>14s} "
                     f"{lam.real:+15.8g}{lam.imag:+14.8g}j  {', '.join(m.dominant)}")
    print("\n".join(lines))
    for path in args.output:
        print(f"wrote {lin.save(path)}")
    return 0
