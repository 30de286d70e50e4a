"""The package's layers import one way: base (errors, units, linalg) <- mechanics <- engine <- dynamics
<- viewer <- fmi <- tools, and no two modules import each other, directly or through others
(function level imports included). Parsed from the source, so a new circle fails here."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "fmu_mb"
LAYERS = {"mechanics": 1, "engine": 1.5, "dynamics": 2, "viewer": 2.5, "fmi": 3, "tools": 4}


def _graph():
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = list(f.relative_to(ROOT.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        if is_init:
            parts = parts[:-1]
        pkg = parts if is_init else parts[:-1]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "")
                                                     .startswith("fmu_mb")):
                base = (pkg[: len(pkg) - node.level + 1] if node.level else [])
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    cand = f"{target}.{a.name}"
                    p = ROOT.parent / cand.replace(".", "/")
                    deps.add(cand if p.with_suffix(".py").exists() or p.is_dir() else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("fmu_mb")}
        mods[".".join(parts)] = deps - {".".join(parts)}
    return mods


# the robot importers build models through the mechanics' builder and list the outputs an
# FMU declares through the dynamics' output list; the viewer, the FMI layer and the tools use them
LAYERS["importers"] = 2.2


def _layer(mod):
    parts = mod.split(".")
    if mod == "fmu_mb.__main__":        # `python -m fmu_mb`: the entry point, above the tools
        return 5
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def test_layers_import_downwards_only():
    bad = [(m, d) for m, deps in _graph().items() if m != "fmu_mb" for d in deps
           if _layer(d) > _layer(m)]
    assert bad == [], f"imports against the layer order (module, imported): {bad}"


def test_no_import_cycles():
    mods = _graph()

    def reach(a):
        seen, todo = set(), [a]
        while todo:
            x = todo.pop()
            for d in mods.get(x, ()):
                if not d.startswith(x + ".") and d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    reached = {m: reach(m) for m in mods}
    cycles = sorted({tuple(sorted((a, b))) for a in mods for b in reached[a]
                     if b != a and a in reached.get(b, ()) and not b.startswith(a + ".")
                     and not a.startswith(b + ".")})
    assert cycles == [], f"modules that import each other: {cycles}"


def test_graph_sees_the_package():
    mods = _graph()
    # the check above must be able to fail: it sees the real edges
    assert "fmu_mb.dynamics.formulations" in mods["fmu_mb.dynamics.integrate"]
    assert "fmu_mb.mechanics.constraints" in mods["fmu_mb.dynamics.impact"]
