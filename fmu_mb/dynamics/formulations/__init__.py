"""Formulations of the equations of motion, selectable by name.

Each is a small namespace with the same functions:
    accelerations(model, q, qd, t, u, baumgarte=None) -> Dynamics
    initial_state(model) -> State
    project(model, y, t, tol) -> y on the constraint manifold
    absolute(model, q, qd) -> (x, xd) absolute body coordinates
    lam(model, dyn) -> multipliers of every Newton-Euler constraint row
    native_advance(model, state, t_end, u, settings) -> (q, qd, h), or None; only
        formulations that integrate in compiled code have it (others: None attribute)
    native_stepper(model, settings, t, y, t_end, h, u) -> a stepper for the contact event
        loop (integrate._Stepper's interface), or None (likewise)
    cosim_stepper(model, settings) -> step(state, t_end, u) -> State, or None: the same
        with the settings bound once (integrate.stepper; None attribute where absent)
    markers(model, q, qd) -> (n_markers, 6) positions and velocities, or None: a compiled
        shortcut for the marker outputs (recursive, spatial; None attribute where absent)
    element_values(model, q, qd, u) -> per element its outputs, or None: the same for the
        force elements' outputs
    supports(model) -> bool, or None for the formulations that run every model (recursive:
        trees, closed loops, contacts and drives with a law given as data; spatial: trees and
        closed loops, no drives or contacts; fmu_mb.engine.kernel.supported and
        fmu_mb.engine.spatial_kernel.supported say why not)
and tmt and lagrange also (for contacts, fmu_mb.dynamics.impact_minimal)
    equations(model, q, qd, t, u) -> Mbar, fbar, x, xd, Tq, g   (Mbar qdd = fbar + rows)
    kinematics(model, q, qd) -> x, xd, Tq, g
and newton_euler, tmt and lagrange (for the implicit integrators, see formulations.dae)
    dae(model, q, qd, t, u) -> DaeTerms(M, f, phi, D, phi_t, conv)

newton_euler works in absolute coordinates x; tmt, lagrange and recursive in the tree joint
coordinates (fmu_mb.mechanics.tree.tree_coordinates), tmt and lagrange with cut joints and drives as
constraint rows; recursive (the articulated-body algorithm in C, with the cut rows closed in C
and compiled steps between contact events, drives as prescribed coordinates) runs every model
but those with drives of Python functions or on cut joints (spatial: trees and closed loops
with force elements, no drives or contacts); minimal integrates only the f independent
coordinates of closed loops
(coordinate partitioning, the closure solved at each evaluation).

"auto" (the default of Settings.formulation) is no formulation of its own: `auto_choice(model)`
picks the first entry of `AUTO` whose supports(model) accepts the model, and every entry point
(initial_state, advance, Outputs, simulate, the FMU) runs that one.
"""
import importlib
import weakref
from types import SimpleNamespace

from ...errors import InputError
from ..state import State

FORMULATIONS = ("newton_euler", "tmt", "lagrange", "recursive", "minimal")
#: the values Settings.formulation accepts: "auto" (default) or one of FORMULATIONS
CHOICES = ("auto",) + FORMULATIONS


#: coordinates of each formulation's state (each module's COORDINATES, checked when it is
#: loaded), known without importing the formulation
KINDS = {"newton_euler": "absolute", "tmt": "joint", "lagrange": "joint", "recursive": "joint",
         "minimal": "joint"}


def _module(name):
    """The formulation module `name`, imported on first use: an FMU loads only the one it
    runs (and newton_euler, tmt as fallbacks only when they are needed)."""
    return importlib.import_module(f"{__name__}.{name}")


def _namespace(name):
    mod = _module(name)
    if mod.COORDINATES != KINDS[name]:
        raise AssertionError(f"formulations.KINDS[{name!r}] is {KINDS[name]!r}, the module "
                             f"says {mod.COORDINATES!r}")
    if name == "newton_euler":
        return SimpleNamespace(
            name=name, coordinates_kind=mod.COORDINATES, coordinates=mod.coordinates,
            accelerations=mod.accelerations,
            initial_state=lambda model: State(model.t0, model.x0.copy(), model.xd0.copy(), 0.0,
                                              mod.COORDINATES),
            project=lambda model, y, t, tol: mod.project_absolute(model, y, t, tol),
            absolute=lambda model, q, qd: (q, qd),
            lam=lambda model, dyn: dyn.lam, native_advance=None, native_stepper=None,
            cosim_stepper=None, supports=None, markers=None, dae=mod.dae_terms)
    return SimpleNamespace(
        name=name, coordinates_kind=mod.COORDINATES, coordinates=mod.coordinates,
        accelerations=mod.accelerations, initial_state=mod.initial_state,
        project=mod.project, absolute=mod.absolute, lam=mod.lam,
        native_advance=getattr(mod, "native_advance", None),
        native_stepper=getattr(mod, "native_stepper", None),
        cosim_stepper=getattr(mod, "cosim_stepper", None),
        supports=getattr(mod, "supports", None), markers=getattr(mod, "markers", None),
        element_values=getattr(mod, "element_values", None),
        equations=getattr(mod, "reduced_equations", None),
        kinematics=getattr(mod, "kinematics", None), dae=getattr(mod, "dae_terms", None))


class _Registry(dict):
    """name -> the formulation's namespace, made when first asked for."""

    def __missing__(self, name):
        if name not in KINDS:
            raise KeyError(name)
        value = self[name] = _namespace(name)
        return value


_REGISTRY = _Registry()


def get_formulation(name, model=None):
    """The formulation namespace called `name` ("auto": the one auto_choice(model) picks);
    InputError lists the valid names."""
    if name == "auto":
        if model is None:
            raise InputError("formulation 'auto' is chosen per model: give the model")
        name = auto_choice(model)[0]
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown formulation {name!r}; formulations are "
                         f"{list(CHOICES)}") from None


def _tree_map(model):
    from ...mechanics.tree import tree_map
    return tree_map(model)


def _recursive_supports(model):
    from ...errors import SingularSystemError
    from ...engine.kernel import KernelUnavailable, library, supported

    if getattr(model, "spatial", False):
        from ...engine.spatial_kernel import library as spatial_library, supported as spatial_supported

        why, lib = spatial_supported(model, contacts=True), spatial_library
    else:
        why, lib = supported(model), library
    if why is not None:
        return why
    try:
        lib()                         # built once (or found prebuilt, as in an FMU)
    except (KernelUnavailable, OSError) as exc:
        return f"the compiled kernel is unavailable ({exc})"
    # the articulated-body algorithm divides by articulated inertias: a massless body, or a
    # point mass whose rotation is a tree coordinate (seed 002's ball on a string of massless
    # rods), makes one singular, so auto leaves such models to the formulations with
    # multipliers (formulation 'recursive' set explicitly still tries and says why it fails)
    # a body placed by a driven tree joint is exempt: a prescribed joint never divides by
    # its articulated inertia (seed 000's driven crane with a massless cart)
    # (planar kernel only: the spatial one closes drives as rows, which needs the inertia)
    driven = {d.joint for d in model.drives}
    placed_by_drive = set()
    if driven and not getattr(model, "spatial", False):
        tm = _tree_map(model)
        placed_by_drive = {model.bodies[int(tm.other[k])].name for k in range(tm.nt)
                           if 0 <= tm.coord[k] < len(tm.joints)
                           and model.joints[tm.joints[tm.coord[k]]].name in driven}
    massless = [b.name for b in model.bodies if b.mass == 0.0 and b.name not in placed_by_drive]
    if massless:
        return f"it has massless bodies {massless} (a singular articulated inertia)"
    try:
        recursive = _module("recursive")
        s = recursive.initial_state(model)
        recursive.accelerations(model, s.q, s.qd, model.t0, model.input_vector(None))
    except SingularSystemError:
        return "its articulated inertia is singular at the initial state (a massless subtree)"
    return None


#: The order "auto" tries, fastest first: (formulation, supports(model) -> None when it runs
#: the model, else the reason why not). Measured with `python bench/formulations.py` (the same
#: simulation, default settings, in every formulation that runs the model) and
#: `python bench/loops_rhs.py`: recursive (the compiled kernel) is 3-40x faster than the others
#: on open trees and 1000x and more on closed loops, and 2-3x faster than tmt on contact
#: models, 7x faster than newton_euler on the driven crane and 2x on the excavator's
#: cylinders; where it does not apply (drives of Python functions, no C compiler), newton_euler
#: was the fastest in every case, 1.2-2.4x ahead of tmt and 2-5x ahead of lagrange. The
#: implicit methods, which recursive does not run, prefer tmt (Settings.for_model). A new
#: formulation goes in front of the entries it beats.
AUTO = [
    ("recursive", _recursive_supports),
    ("newton_euler", lambda model: _absolute_supports(model)),
    ("tmt", lambda model: None),      # what newton_euler cannot run (armature) runs here
]


def _absolute_supports(model):
    """None, or why newton_euler cannot run `model` (armature lives on joint coordinates)."""
    arm = [j.name for j in model.joints if getattr(j, "armature", 0.0)]
    return (f"joints {arm} have armature, which acts on joint coordinates (tmt, lagrange, "
            f"recursive, minimal)") if arm else None

_CHOSEN = weakref.WeakKeyDictionary()


def _survey(model):
    """([names of the AUTO entries that support model, in order], {name: why not}), made
    once per Model."""
    hit = _CHOSEN.get(model)
    if hit is None:
        ok, reasons = [], {}
        for name, supports in AUTO:
            why = supports(model)
            if why is None:
                ok.append(name)
            else:
                reasons[name] = why
        if not ok:
            raise InputError(f"model '{model.name}': no formulation supports it: {reasons}")
        hit = _CHOSEN[model] = (ok, reasons)
    return hit


def auto_choice(model):
    """(name, reasons) of the formulation "auto" runs `model` with: the first AUTO entry that
    supports it; reasons maps each formulation tried before it to why it did not fit."""
    ok, reasons = _survey(model)
    order = [n for n, _ in AUTO]
    first = ok[0]
    return first, {k: v for k, v in reasons.items()
                   if k in order and order.index(k) < order.index(first)}


def candidates(model, coords=None):
    """The formulations "auto" may run `model` with, best first: the AUTO entries that
    support it (of the coordinate kind `coords` of a given state, if any), then the fallback
    of that kind (newton_euler for absolute, tmt for joint coordinates)."""
    names = list(_survey(model)[0])
    if coords is not None:
        names = [n for n in names if KINDS[n] == coords]
        fallback = "newton_euler" if coords == KINDS["newton_euler"] else "tmt"
        if fallback not in names:
            names.append(fallback)
    return names


def resolve(name, model, coords=None):
    """`name`, or the formulation "auto" picks for `model` when name is "auto". With the
    coordinate kind of a given state (coords: "absolute" or "joint"), "auto" keeps to
    formulations of that kind: a state made by newton_euler continues in newton_euler, one
    made in joint coordinates in the chosen joint-coordinate formulation or tmt.
    (Settings.for_model also skips a formulation the other solver settings rule out.)"""
    return candidates(model, coords)[0] if name == "auto" else name


def describe_choice(model, name="auto", chosen=None):
    """One line saying which formulation runs `model` and why (for logs and `info`); chosen:
    what the solver settings made of "auto" (Settings.for_model), if not auto's first."""
    if name != "auto":
        return f"formulation {name} (set explicitly)"
    first, reasons = auto_choice(model)
    why = [f"not {k}: {v}" for k, v in reasons.items()]
    if chosen is not None and chosen != first:
        why.append(f"not {first}: the solver settings rule it out")
    return f"formulation auto -> {chosen or first}" + (f" ({'; '.join(why)})" if why else "")
