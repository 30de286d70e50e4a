"""Which state derivatives and outputs depend on which states and inputs, from the model's
structure (the dependencies an FMU declares in its ModelStructure; linearize.model_structure).

The states are the independent tree coordinates q_i (a partition `ind` of tmt's coordinates,
linearize._partition) and their rates. The dependencies follow from the graph of the model:

- path(b): the tree coordinates on body b's path to the ground (a floating subtree: every
  coordinate of that subtree). A body's pose is a function of q[path(b)], its velocity of
  q[path(b)] and qd[path(b)].
- constraint groups: tree coordinates coupled by rows Phi(q, t) = 0 (cut joints: the paths of
  both bodies; drives: the driven joint's coordinates; the Euler-parameter normalisation of a
  joint or a floating body: its four parameters; and every nonzero of Dq at the pose given).
  A dependent coordinate q_d is a function of the independent coordinates of its group, its
  rate of their positions and rates.
- components: bodies connected through joints, elements, contacts, drives and constraint
  groups (the ground does not connect). The accelerations of a component, its reactions,
  drive efforts and contact forces depend on every state of the component and on the inputs
  of its elements.

Per output: a body's or marker's position outputs depend on pos(b) (P of path(b)), velocity
outputs on vel(b) (pos(b) and the rates), a planar body's angle and angular velocity only on
the angles (and their rates) on its path; a tree joint's coordinate outputs on its own
coordinates' P, its rate outputs on their V; a cut joint's on the poses (velocities) of both
bodies; an element's geometric outputs (length, stroke, angle) on the poses of its bodies,
its other outputs on their velocities and its inputs; a contact's gap on the poses of its
bodies (its impact records are constant between events: no dependency); energies on every
state (the potential energy on every position). der(q_i) is the rate state itself.

Every set is exact or a superset of the true dependencies (an entry that is zero at every
state, e.g. the acceleration of a free body without forces on its position, may be declared;
FMI allows that). Whatever the analysis cannot place (a coordinate of no known joint or body,
an input of no element, an output of an unknown entity) depends on everything.
"""
import numpy as np

#: output fields that are a function of the positions only
_POSITION_FIELDS = {
    "motion": {"x", "y", "z", "phi", "e0", "e1", "e2", "e3", "alpha", "beta", "gamma"},
    "markers": {"x", "y", "z"},
    "coords": {"angle", "position", "angle1", "angle2"},
    "elements": {"length", "stroke", "angle"},
    "contacts": {"gap"},
}
#: contact outputs that change only at events (impact records)
_EVENT_FIELDS = {"impacts", "last_time", "last_impulse", "active", "energy_loss"}
#: Euler-parameter coordinate suffixes (a normalisation row couples them)
_EULER = {"e0", "e1", "e2", "e3"}


class _Union:
    """Union-find over hashable items."""

    def __init__(self):
        self.parent = {}

    def find(self, a):
        p = self.parent.setdefault(a, a)
        while p != self.parent[p]:
            self.parent[p] = self.parent[self.parent[p]]
            p = self.parent[p]
        self.parent[a] = p
        return p

    def union(self, items):
        items = list(items)
        for b in items[1:]:
            ra, rb = self.find(items[0]), self.find(b)
            if ra != rb:
                self.parent[rb] = ra


def _paths(model, coords):
    """({body: set of tree-coordinate indices on its path to the ground}, {joint name: its
    coordinate indices}, unplaced coordinate indices)."""
    by_prefix = {}
    for i, name in enumerate(coords):
        by_prefix.setdefault(name.rsplit(".", 1)[0], []).append(i)
    tree = [model.joint(n) for n in model.topology.tree_joints]
    tree_names = {j.name for j in tree}
    joint_coords = {j.name: set(by_prefix.get(j.name, ())) for j in tree}
    placed = set().union(*joint_coords.values()) if joint_coords else set()
    adj = {}
    for j in tree:
        adj.setdefault(j.parent, []).append((j.child, j.name))
        adj.setdefault(j.child, []).append((j.parent, j.name))
    path = {"ground": set()}
    queue = ["ground"]
    while queue:                                    # breadth first from the ground
        b = queue.pop()
        for other, jn in adj.get(b, ()):
            if other not in path:
                path[other] = path[b] | joint_coords[jn]
                queue.append(other)
    for body in model.bodies:                       # floating subtrees: all their coordinates
        if body.name in path:
            continue
        members, stack = {body.name}, [body.name]
        while stack:
            b = stack.pop()
            for other, _ in adj.get(b, ()):
                if other not in members:
                    members.add(other)
                    stack.append(other)
        own = set()
        for b in members:
            own |= set(by_prefix.get(b, ()))
        for j in tree:
            if j.parent in members or j.child in members:
                own |= joint_coords[j.name]
        placed |= own
        for b in members:
            path[b] = own
    for name, ix in by_prefix.items():               # coordinates of non-tree prefixes that
        if name not in tree_names and name in path:  # name a body (floating roots)
            placed |= set(ix)
    unplaced = set(range(len(coords))) - placed
    if unplaced:                                      # unknown coordinates move every body
        for b in path:
            if b != "ground":
                path[b] = path[b] | unplaced
    return path, joint_coords, unplaced


def dependencies(model, coords, ind, Dq=None):
    """Structural dependencies of the minimal model with independent coordinates `ind`.

    coords : tmt's tree-coordinate names (n,); ind : indices of the independent ones (f,);
    Dq : the constraint Jacobian (rows, n) at the pose of the partition or None (its nonzeros
    join the constraint groups). Returns (acc, outs, everything): acc[k] the set of knowns of
    der(qd_i[k]) and outs {output name: set of knowns} for the real outputs, where a known is
    ("q", k) or ("qd", k) (state k of the f independent coordinates) or ("u", j) (input j of
    model.inputs); everything: the set of all knowns."""
    from .outputs import output_groups, output_spec

    n, ind = len(coords), [int(i) for i in ind]
    slot = {c: k for k, c in enumerate(ind)}         # coordinate -> its state position
    path, joint_coords, unplaced = _paths(model, coords)
    bodies_of = lambda *names: [b for b in names if b != "ground"]  # noqa: E731

    # constraint groups over the tree coordinates
    groups = _Union()
    for i in range(n):
        groups.find(i)
    jmap = {j.name: j for j in model.joints}
    for name in model.topology.cut_joints:
        j = jmap[name]
        groups.union(path.get(j.parent, set()) | path.get(j.child, set()))
    for d in model.drives:
        j = jmap[d.joint]
        own = joint_coords.get(j.name)
        groups.union(own if own else path.get(j.parent, set()) | path.get(j.child, set()))
    by_prefix = {}
    for i, name in enumerate(coords):
        pre, suf = name.rsplit(".", 1)
        if suf in _EULER:
            by_prefix.setdefault(pre, []).append(i)
    for ix in by_prefix.values():
        groups.union(ix)
    if Dq is not None and Dq.size:
        for row in np.asarray(Dq):
            groups.union(np.flatnonzero(row).tolist())
    groups.union(unplaced)
    members = {}
    for i in range(n):
        members.setdefault(groups.find(i), []).append(i)

    def P(c):                                        # knowns of q[c]
        if c in slot:
            return {("q", slot[c])}
        return {("q", slot[i]) for i in members[groups.find(c)] if i in slot}

    def V(c):                                        # knowns of qd[c]
        if c in slot:
            return {("qd", slot[c])}
        p = P(c)
        return p | {("qd", k) for _, k in p}

    pos_of, vel_of = {}, {}

    def pos(b):
        if b not in pos_of:
            s = set()
            for c in path.get(b, ()):
                s |= P(c)
            pos_of[b] = s
        return pos_of[b]

    def vel(b):
        if b not in vel_of:
            s = set(pos(b))
            for c in path.get(b, ()):
                s |= V(c)
            vel_of[b] = s
        return vel_of[b]

    # components of bodies
    comps = _Union()
    for b in model.bodies:
        comps.find(b.name)
    for j in model.joints:
        comps.union(bodies_of(j.parent, j.child))
    for e in model.elements:
        comps.union(bodies_of(e.a, e.b))
    for c in model.contacts:
        comps.union(bodies_of(c.body, c.other))
        if c.joint is not None:
            j = jmap[c.joint]
            comps.union(bodies_of(j.parent, j.child, c.body))
    owner = {}                                       # coordinate -> a body it moves
    for b, cs in path.items():
        if b == "ground":
            continue
        for c in cs:
            owner.setdefault(c, b)
    for ix in members.values():
        comps.union({comps.find(owner[i]) for i in ix if i in owner})
    comp_known = {}
    for b, cs in path.items():
        if b == "ground":
            continue
        s = comp_known.setdefault(comps.find(b), set())
        for c in cs:
            s |= P(c) | V(c)
    everything = ({("q", k) for k in range(len(ind))} | {("qd", k) for k in range(len(ind))}
                  | {("u", j) for j in range(len(model.inputs))})
    in_index = {u.name: j for j, u in enumerate(model.inputs)}
    used = set()

    def inputs_of(e):
        names = ([e.input] if e.input else []) + [g[0] for g in (e.gains or ())]
        ix = {("u", in_index[k]) for k in names if k in in_index}
        used.update(ix)
        return ix

    el_inputs = {e.name: inputs_of(e) for e in model.elements}
    for e in model.elements:
        for b in bodies_of(e.a, e.b):
            comp_known.setdefault(comps.find(b), set()).update(el_inputs[e.name])
    stray = {("u", j) for j in range(len(model.inputs))} - used   # inputs of no element
    for s in comp_known.values():
        s |= stray

    def comp(*names):
        s = set()
        for b in bodies_of(*names):
            s |= comp_known.get(comps.find(b), set())
        return s

    # accelerations of the states
    acc = []
    for k, c in enumerate(ind):
        b = owner.get(c)
        acc.append(comp(b) if b is not None else set(everything))

    # outputs
    spec = output_spec(model)
    emap = {e.name: e for e in model.elements}
    mmap = {m.name: m for m in model.markers}
    cmap = {c.name: c for c in model.contacts}
    dmap = {d.name: d for d in model.drives}
    all_pos = {("q", k) for k in range(len(ind))}
    outs = {}
    for group, ix in output_groups(model).items():
        for i in ix:
            var = spec[i]
            if var.kind != "real":
                continue
            entity, fld = var.name.rsplit(".", 1) if "." in var.name else ("", var.name)
            geometric = fld in _POSITION_FIELDS.get(group, ())
            dep = None
            if group == "motion" and entity in path:
                if fld in ("phi", "omega"):      # planar: the sum of the path's angles
                    dep = set()
                    for c in path[entity]:
                        if c in unplaced or coords[c].rsplit(".", 1)[1] in ("angle", "phi"):
                            dep |= P(c) if fld == "phi" else V(c)
                else:
                    dep = pos(entity) if geometric else vel(entity)
            elif group == "markers" and entity in mmap:
                b = mmap[entity].body
                dep = pos(b) if geometric else vel(b)
            elif group == "coords" and entity in jmap:
                own = joint_coords.get(entity)
                j = jmap[entity]
                if own:
                    dep = set()
                    for c in own:
                        dep |= P(c) if geometric else V(c)
                else:
                    f2 = pos if geometric else vel
                    dep = f2(j.parent) | f2(j.child)
            elif group == "dynamics":
                if entity in jmap:
                    dep = comp(jmap[entity].parent, jmap[entity].child)
                elif entity in dmap:
                    j = jmap[dmap[entity].joint]
                    dep = comp(j.parent, j.child)
                elif entity in cmap:
                    c = cmap[entity]
                    names = [c.body, c.other]
                    if c.joint is not None:
                        names += [jmap[c.joint].parent, jmap[c.joint].child]
                    dep = comp(*names)
            elif group == "elements" and entity in emap:
                e = emap[entity]
                dep = (pos(e.a) | pos(e.b)) if geometric else \
                    (vel(e.a) | vel(e.b) | el_inputs[e.name])
            elif group == "contacts" and entity in cmap:
                c = cmap[entity]
                if fld in _EVENT_FIELDS:
                    dep = set()
                elif geometric:
                    names = [c.body, c.other]
                    if c.joint is not None:
                        names += [jmap[c.joint].parent, jmap[c.joint].child]
                    dep = set()
                    for b in names:
                        dep |= pos(b)
            elif group == "energy":
                dep = all_pos if var.name == "energy.potential" else everything
            outs[var.name] = set(everything) if dep is None else set(dep)
    return acc, outs, everything
