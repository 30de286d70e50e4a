"""Robot description import: URDF (urdf.py, through yourdfpy) and MJCF (mjcf.py, through
MuJoCo's own compiler) into spatial Models (robot.py); docs/import.md.

load(path, overrides, **options) dispatches by the file's extension: a model file (.py),
a URDF (.urdf) or an MJCF file (.xml, .mjcf). model_file(path, folder, **options) writes the
model file of a robot (its description as data and build(**overrides)), which `fmu-mb build`
builds like a hand-written one.
"""
from pathlib import Path

ROBOT_SUFFIXES = (".urdf", ".xml", ".mjcf")

#: the options of build_robot that the command line and model_file() pass on
OPTIONS = ("base", "fixed", "limits", "damping", "links", "payload_link", "reactions",
           "friction")


def is_robot_file(path):
    """True for a robot description (.urdf, .xml, .mjcf), False for a model file."""
    return Path(path).suffix.lower() in ROBOT_SUFFIXES


def description(path, **parse_options):
    """The robot description (importers.robot) of a URDF or MJCF file."""
    from ..errors import ModelError
    suffix = Path(path).suffix.lower()
    wrong = [k for k in parse_options if k != ("mimic" if suffix == ".urdf" else "actuators")]
    if wrong:
        raise ModelError(f"{path}: option(s) {wrong} apply to "
                         f"{'MJCF' if suffix == '.urdf' else 'URDF'} files only")
    if suffix == ".urdf":
        from .urdf import parse_urdf
        return parse_urdf(path, **parse_options)
    from .mjcf import parse_mjcf
    return parse_mjcf(path, **parse_options)


def load(path, overrides=None, **options):
    """The Model of a model file (.py: build(**overrides)), a URDF (.urdf) or an MJCF file
    (.xml, .mjcf; options: importers.robot.build_robot's, and mimic= for URDF)."""
    if not is_robot_file(path):
        from ..mechanics.loader import load_model
        return load_model(path, **dict(overrides or {}))
    from .robot import build_robot
    parse = {k: options.pop(k) for k in ("mimic", "actuators") if k in options}
    return build_robot(description(path, **parse), overrides, **options)


def model_file(path, folder, **options):
    """Write the model file of the robot at `path` into `folder` (named after the robot) and
    return its path: a docstring, DESCRIPTION (the parsed robot as data: no parser and no
    robot file is needed to build it), OPTIONS and build(**overrides)."""
    from .robot import identifier
    parse = {k: options.pop(k) for k in ("mimic", "actuators") if k in options}
    desc = description(path, **parse)
    name = identifier(options.get("name") or desc["name"], set())
    opts = {k: (tuple(v) if isinstance(v, list) else v) for k, v in options.items()
            if v is not None}
    text = (f'"""{desc["description"]}."""\n'
            "from fmu_mb.importers.robot import build_robot\n\n"
            f"DESCRIPTION = {desc!r}\n\n"
            f"OPTIONS = {opts!r}\n\n\n"
            "def build(**overrides):\n"
            "    return build_robot(DESCRIPTION, overrides, description=__doc__, **OPTIONS)\n")
    out = Path(folder) / f"{name}.py"
    out.write_text(text, encoding="utf-8")
    return out
