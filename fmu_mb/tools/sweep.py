"""Parameter sweeps of an FMU on Dask: `fmu-mb sweep MODEL.fmu --param NAME=start:stop:count ...`.

Every variant of the grid (cartesian product of the linspaces) runs with fmpy.simulate_fmu
in a Dask worker *process* (a pythonfmu FMU shares one interpreter per process, so variants
must not share a process concurrently): a dask.distributed LocalCluster with processes=True and
threads_per_worker=1 by default, or an existing cluster given by its scheduler address (its
workers need fmu_mb, fmpy, numpy and scipy, and must see the FMU at the same path).

The result is one table: the variant index, the parameter values, the final value of each chosen
output, a status ("ok" or "error") and the error message. A failing variant (an invalid
parameter, or a step the FMU discards so that fmpy stops before the stop time) is recorded and
does not stop the sweep.
"""
import csv
import itertools
import math
import os

import numpy as np

from ..errors import InputError


def parse_param(text):
    """'NAME=start:stop:count' -> (name, values) with values = linspace(start, stop, count)."""
    if "=" not in text:
        raise InputError(f"--param: expected NAME=start:stop:count, received {text!r}")
    name, spec = (s.strip() for s in text.split("=", 1))
    parts = spec.split(":")
    if not name or len(parts) != 3:
        raise InputError(f"--param: expected NAME=start:stop:count, received {text!r}")
    try:
        start, stop = float(parts[0]), float(parts[1])
    except ValueError:
        raise InputError(f"--param {name}: start and stop must be numbers, received "
                         f"{parts[0]!r} and {parts[1]!r}") from None
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise InputError(f"--param {name}: start and stop must be finite, received {spec!r}")
    try:
        count = int(parts[2])
    except ValueError:
        raise InputError(f"--param {name}: count must be an integer >= 1, received "
                         f"{parts[2]!r}") from None
    if count < 1:
        raise InputError(f"--param {name}: count must be an integer >= 1, received {count}")
    values = [start] if count == 1 else [float(v) for v in np.linspace(start, stop, count)]
    return name, values


def grid(params):
    """The cartesian product of {name: values} as a list of {name: value} (first name slowest)."""
    names = list(params)
    return [dict(zip(names, combo)) for combo in itertools.product(*params.values())]


def check_names(fmu, params, outputs=None):
    """Check parameter and output names against the FMU; returns (params, outputs).

    Integer parameters are accepted when every value is integral. outputs=None means all
    outputs of the FMU.
    """
    from fmpy import read_model_description

    md = read_model_description(str(fmu))
    pvars = {v.name: v for v in md.modelVariables if v.causality == "parameter"}
    onames = [v.name for v in md.modelVariables if v.causality == "output"]
    checked = {}
    for name, values in params.items():
        if name not in pvars:
            raise InputError(f"--param: unknown parameter {name!r} of {os.path.basename(fmu)}; "
                             f"parameters are {list(pvars)}")
        vtype = pvars[name].type
        if vtype == "Integer":
            if any(v != int(v) for v in values):
                raise InputError(f"--param {name}: an Integer parameter needs integral values, "
                                 f"received {values}")
            values = [int(v) for v in values]
        elif vtype != "Real":
            raise InputError(f"--param {name}: only Real and Integer parameters can be swept; "
                             f"{name!r} is {vtype}")
        checked[name] = values
    if outputs:
        unknown = [o for o in outputs if o not in onames]
        if unknown:
            raise InputError(f"--outputs: unknown output(s) {unknown} of "
                             f"{os.path.basename(fmu)}; outputs are {onames}")
        outputs = list(outputs)
    else:
        outputs = onames
    return checked, outputs


def run_variant(fmu, start_values, stop_time, output_interval, outputs):
    """Run one variant with fmpy; returns {'status', 'error', 'time', outputs...} (no raise)."""
    import fmpy

    messages = []

    def logger(env, instance, status, category, message):
        if status >= 1:   # warning, discard, error, fatal
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            messages.append(message.strip())

    row = {"status": "ok", "error": "", "time": float("nan")}
    row.update({o: float("nan") for o in outputs})
    reached = []            # the last communication point fmpy recorded, with its outputs

    def step_finished(t, recorder):
        if recorder.rows:
            reached[:] = [[c[0] for c in recorder.cols], recorder.rows[-1]]
        return True

    try:
        res = fmpy.simulate_fmu(str(fmu), stop_time=stop_time, output_interval=output_interval,
                                start_values=dict(start_values), output=list(outputs),
                                logger=logger, debug_logging=True, step_finished=step_finished)
    except Exception as exc:   # noqa: BLE001 -- any failure of a variant is recorded
        row["status"] = "error"
        head = f"{type(exc).__name__}: {exc}"
        if reached:         # a step failed in the model: the values where the run stopped
            for name, value in zip(*reached):
                if name in row:
                    row[name] = float(value)
            head = f"simulation stopped at t = {row['time']!r} s before the stop time " \
                   f"{stop_time!r} s ({head})"
        row["error"] = _message(head, messages)
        return row
    row["time"] = float(res["time"][-1])
    for o in outputs:
        row[o] = float(res[o][-1])
    if row["time"] < stop_time - 1e-9 * max(1.0, abs(stop_time)):
        row["status"] = "error"
        row["error"] = _message(f"simulation stopped at t = {row['time']!r} s before the "
                                f"stop time {stop_time!r} s (a step was discarded)", messages)
    return row


def _message(head, messages):
    useful = [m for m in messages if not m.startswith("Fatal py exception")] or messages
    head = head.rstrip(". ")
    text = head + ("; FMU log: " + " | ".join(useful) if useful else "")
    return " ".join(text.split())   # one line in the table


def sweep(fmu, params, stop_time, output_interval=None, outputs=None, scheduler=None,
          workers=None, progress=False):
    """Run every variant of `params` ({name: values}) and return (columns, rows).

    rows are dicts in grid order with keys 'variant', the parameter names, 'time' (the last
    time reached), the outputs, 'status' and 'error'.
    """
    from dask.distributed import Client, LocalCluster, as_completed

    from ..dynamics.simulate import _Progress

    fmu = os.path.abspath(str(fmu))
    if not os.path.isfile(fmu):
        raise InputError(f"FMU {fmu!r} does not exist")
    if not (isinstance(stop_time, (int, float)) and math.isfinite(stop_time) and stop_time > 0):
        raise InputError(f"stop_time must be a finite number > 0, received {stop_time!r}")
    if workers is not None and workers < 1:
        raise InputError(f"workers must be >= 1, received {workers}")
    params, outputs = check_names(fmu, params, outputs)
    variants = grid(params)
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        import logging

        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        futures = {client.submit(run_variant, fmu, v, stop_time, output_interval, outputs,
                                 pure=False): k for k, v in enumerate(variants)}
        results = [None] * len(variants)
        bar = _Progress(len(variants)) if progress else None
        for done, fut in enumerate(as_completed(futures), 1):
            k = futures[fut]
            try:
                results[k] = fut.result()
            except Exception as exc:   # noqa: BLE001 -- e.g. a worker process died
                results[k] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            if bar:
                bar.update(done)
        if bar:
            bar.close()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    columns = ["variant", *params, "time", *outputs, "status", "error"]
    rows = []
    for k, (v, r) in enumerate(zip(variants, results)):
        row = {"variant": k, **v, "time": float("nan"), **{o: float("nan") for o in outputs}}
        row.update(r)
        rows.append(row)
    return columns, rows


def write_table(columns, rows, out):
    """Write the sweep table as CSV to a path or an open text file."""
    def fmt(v):
        return repr(float(v)) if isinstance(v, (float, np.floating)) else str(v)

    own = isinstance(out, (str, os.PathLike))
    f = open(out, "w", newline="") if own else out
    try:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([fmt(r[c]) for c in columns])
    finally:
        if own:
            f.close()
