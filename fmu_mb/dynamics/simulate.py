"""simulate(): run a model over time and return the outputs as a structured numpy array.

It is a loop of `advance()` over communication intervals with the inputs sampled at the start
of each interval and held (zero-order hold): exactly what an FMI master does with the FMU, so
in-process and FMU results compare directly.
"""
import math
import sys
import time as _time

import numpy as np

from ..errors import InputError, plain
from .integrate import Settings, advance, initial_state
from .outputs import output_spec, output_values


def input_functions(model, inputs):
    """Normalise `inputs` to {name: f(t)}.

    Each value may be a number, a callable f(t), or a table: a pair (times, values) or an
    (n, 2) array, interpolated linearly and held constant outside its range.
    """
    out = {}
    names = model.input_names
    for name, spec in (inputs or {}).items():
        if name not in names:
            raise InputError(f"model '{model.name}': unknown input '{name}'; inputs are "
                             f"{list(names)}")
        if callable(spec):
            out[name] = spec
        elif np.ndim(spec) == 0:
            out[name] = (lambda v: lambda t: v)(float(spec))
        else:
            arr = np.asarray(spec, dtype=float)
            if arr.ndim == 2 and arr.shape[1] == 2:
                tt, vv = arr[:, 0], arr[:, 1]
            elif arr.ndim == 2 and arr.shape[0] == 2:
                tt, vv = arr[0], arr[1]
            else:
                raise InputError(f"input '{name}': a table must be (times, values) or an "
                                 f"(n, 2) array, received shape {arr.shape}")
            if np.any(np.diff(tt) < 0):
                raise InputError(f"input '{name}': table times must be non-decreasing")
            out[name] = (lambda tt, vv: lambda t: float(np.interp(t, tt, vv)))(tt, vv)
    return out


def simulate(model, t_end, output_interval=None, inputs=None, settings=None, state=None,
             progress=False, **solver_options):
    """Simulate `model` from its initial state (or `state`) to t_end [s].

    output_interval : communication interval [s] (default: t_end / 500, at most 0.01 s).
    inputs : {input name: number | f(t) | table}, sampled at each interval start and held.
    settings : Settings, or give its fields as keyword arguments (method=, rtol=, ...);
        formulation "auto" (default) runs the formulation settings.formulation_for(model).
    progress : print a progress bar to stderr.
    Returns a structured array with fields 'time' and every output name (output_spec).
    """
    if settings is None:
        settings = Settings(**solver_options)
    elif solver_options:
        raise InputError("give either settings= or solver keyword arguments, not both")
    settings = settings.for_model(model, state.coords if state else None)   # "auto", once
    state = state or initial_state(model, settings)
    t0 = state.t
    if not isinstance(t_end, (int, float)) or not math.isfinite(t_end) or t_end <= t0:
        raise InputError(f"simulate: t_end must be a finite number > {t0}, received {plain(t_end)}")
    if output_interval is None:
        output_interval = min((t_end - t0) / 500.0, 0.01)
    if not (output_interval > 0 and math.isfinite(output_interval)):
        raise InputError(f"simulate: output_interval must be > 0, received {plain(output_interval)}")
    n = max(1, int(round((t_end - t0) / output_interval)))
    if abs(n * output_interval - (t_end - t0)) > 1e-9 * max(1.0, abs(t_end)):
        n = int(math.ceil((t_end - t0) / output_interval - 1e-9))
    # the grid an FMI master uses: t_k = t0 + k dt, the last point clipped to t_end
    times = np.minimum(t0 + np.arange(n + 1) * output_interval, t_end)
    times[-1] = t_end
    funcs = input_functions(model, inputs)
    spec = output_spec(model)
    data = np.zeros(n + 1, dtype=[("time", float)] + [(v.name, float) for v in spec])
    rows = np.zeros((n + 1, len(spec)))
    names = model.input_names

    def u_at(t):
        return model.input_vector([funcs[k](t) if k in funcs else 0.0 for k in names])

    u = u_at(times[0])
    rows[0] = output_values(model, state, u, settings.formulation)
    bar = _Progress(n) if progress else None
    for k in range(n):
        u = u_at(times[k])
        # t_k + (t_k+1 - t_k): the end time a master's doStep(t_k, step) computes
        t_next = float(times[k] + (times[k + 1] - times[k]))
        state = advance(model, state, t_next, u, settings)
        rows[k + 1] = output_values(model, state, u, settings.formulation)
        if bar:
            bar.update(k + 1)
    if bar:
        bar.close()
    data["time"] = times
    for i, v in enumerate(spec):
        data[v.name] = rows[:, i]
    return data


class _Progress:
    """A minimal progress bar on stderr, shown once a run takes longer than a second, and
    only when stderr is a terminal (in a log file its carriage returns are noise)."""

    def __init__(self, total):
        self.total, self.start, self.shown = total, _time.monotonic(), False
        try:
            self.terminal = sys.stderr.isatty()
        except (AttributeError, ValueError):      # replaced or closed stderr
            self.terminal = False

    def update(self, k):
        if not self.terminal:
            return
        elapsed = _time.monotonic() - self.start
        if elapsed < 1.0 and not self.shown:
            return
        self.shown = True
        frac = k / self.total
        eta = elapsed * (1 - frac) / max(frac, 1e-9)
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r[{bar:<30}] {100 * frac:5.1f}%  {elapsed:6.1f} s, {eta:6.1f} s left")
        sys.stderr.flush()

    def close(self):
        if self.shown:
            sys.stderr.write("\n")
