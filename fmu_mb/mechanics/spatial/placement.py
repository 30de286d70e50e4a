"""Spatial bodies placed along the spanning tree from the tree joints' coordinates (the start
of the assembly, as assembly._tree_placement is for planar models): a revolute joint turns the
child's joint frame by q about z, a prismatic joint moves it by q along z; every other joint
keeps the reference relative pose (frames coincident, or the universal joint's fixed turn).
Bodies no tree joint reaches keep their declared pose."""
import numpy as np

from . import rotations as rot


def _joint_motion(kind, q):
    """Rotation R_J (3, 3) and translation t_J (3,) of the child's joint frame in the
    parent's joint frame."""
    R, t = np.eye(3), np.zeros(3)
    if kind == "revolute":
        c, s = np.cos(q), np.sin(q)
        R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    elif kind == "prismatic":
        t = np.array([0.0, 0.0, q])
    elif kind == "universal":
        R = _UNIVERSAL
    return R, t


# the universal joint's child frame (x = axis, z = axis2) in its parent frame (x = axis2,
# z = axis) at the reference pose (builder._joint3)
_UNIVERSAL = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]])


def tree_placement(model, tree):
    """x (7 nb,) with the bodies along `tree` ([(joint, placed side)]) at the joint
    coordinates given by mb.initial (value, else guess, else 0)."""
    # every body's rotation matrix in one vectorised call (row for row the same numbers)
    A = rot.matrix(np.array([b.orientation for b in model.bodies], float).reshape(-1, 4))
    pose = {b.name: (np.array(b.position, float), A[k]) for k, b in enumerate(model.bodies)}
    pose["ground"] = (np.zeros(3), np.eye(3))
    given = {ic.joint: (ic.value if ic.value is not None else ic.guess)
             for ic in model.initial if ic.value is not None or ic.guess is not None}
    for name, placed in tree:
        j = model.joint(name)
        R, t = _joint_motion(j.kind, given.get(name, 0.0))
        Fp, Fc = np.array(j.frame_p), np.array(j.frame_c)
        sp, sc = np.array(j.parent_point), np.array(j.child_point)
        if placed == j.parent:
            rp, Ap = pose[j.parent]
            Ac = Ap @ Fp @ R @ Fc.T
            pose[j.child] = (rp + Ap @ sp + Ap @ Fp @ t - Ac @ sc, Ac)
        else:
            rc, Ac = pose[j.child]
            Ap = Ac @ Fc @ R.T @ Fp.T
            pose[j.parent] = (rc + Ac @ sc - Ap @ Fp @ t - Ap @ sp, Ap)
    return np.concatenate([np.concatenate([pose[b.name][0], rot.from_matrix(pose[b.name][1])])
                           for b in model.bodies])
