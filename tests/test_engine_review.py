"""Defects found by the review of the C engine's and the native FMU's changes (branch review):
each test failed (or crashed or hung its process) before its fix.

mbe_create must refuse model data whose integers it cannot use safely: sums like offset +
count > size wrapped for an offset near INT_MAX (signed overflow) and passed; a free body
without coordinates, a joint's coordinate index of another kind or joint, a tree whose parents
form a cycle and a joint between a body and itself were accepted and then read or wrote out of
bounds (found by integer mutations of every engine model's data under AddressSanitizer and
UBSan) or looped forever. The engine runs in a subprocess so that a crash or a hang fails the
test instead of ending pytest."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INT_MAX = 2**31 - 1

HOST = r"""
import ctypes, sys, warnings
from pathlib import Path
from fmu_mb.engine import engine as E
from fmu_mb.engine.data import model_data
from fmu_mb.mechanics.loader import load_model
warnings.simplefilter("ignore")
name, arr, idx, val = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = model_data(load_model(Path(sys.argv[5]) / "models" / (name + ".py")))
d.array(arr)[idx] = val
blob = d.to_bytes()
lib = E.library()
err = ctypes.create_string_buffer(1024)
h = lib.mbe_create(blob, len(blob), err, len(err))
if h:
    rc = lib.mbe_initialize(h, ctypes.c_double(0.0), err, len(err))
    u = (ctypes.c_double * 64)()
    if rc == 0:
        lib.mbe_do_step(h, ctypes.c_double(0.01), u, err, len(err))
    lib.mbe_free(h)
    print("ACCEPTED")
else:
    print("REFUSED " + err.value.decode())
"""


def run_mutated(name, array, index, value, timeout=300):
    """mbe_create (then initialize and a step if accepted) on the model data of `name` with
    array[index] = value, in a subprocess: (returncode, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-c", HOST, name, array, str(index), str(value),
                        str(ROOT)], capture_output=True, text=True, timeout=timeout,
                       cwd=str(ROOT))
    return p.returncode, p.stdout, p.stderr


def refused(name, array, index, value, what, timeout=300):
    rc, out, err = run_mutated(name, array, index, value, timeout)
    assert rc == 0, f"the engine crashed (exit {rc}) on {array}[{index}] = {value}: {err[-2000:]}"
    assert out.startswith("REFUSED"), f"{array}[{index}] = {value} was accepted: {out}"
    assert what in out, out


@pytest.fixture(autouse=True)
def _engine_available():
    from fmu_mb.engine.kernel import compiler
    if compiler() is None:
        pytest.skip("no C compiler")


def test_a_spatial_drive_law_offset_near_int_max_is_refused():
    """driven_arm's first drive: its law's offset into DSDP (ISDI[4]) at INT_MAX; offset +
    count wrapped and the law was read 16 GB past the data (segmentation fault)."""
    refused("driven_arm", "ISDI", 4, INT_MAX, "a drive")
    refused("driven_arm", "ISDI", 5, INT_MAX, "a drive")          # the count


def test_a_spatial_joints_first_row_near_int_max_is_refused():
    """driven_arm's first joint: its first row (IJOINT[4]) near INT_MAX; first row + rows
    wrapped and the joint's rows were written out of bounds at the assembly (segfault)."""
    refused("driven_arm", "IJOINT", 4, INT_MAX - 2, "a joint")


def test_a_planar_drive_law_offset_near_int_max_is_refused():
    """container_crane_driven's drive: its law's offset into DDP (IDI[2]) at INT_MAX (the
    same wrap in the planar check: segfault)."""
    refused("container_crane_driven", "IDI", 2, INT_MAX, "drive")


def test_a_planar_joints_first_row_near_int_max_is_refused():
    """four_bar's first joint: its first row (IJOINT[4]) near INT_MAX was accepted (row +
    count wrapped: undefined behaviour)."""
    refused("four_bar", "IJOINT", 4, INT_MAX - 1, "a joint")


def test_a_spatial_tree_joints_coordinates_near_int_max_are_refused():
    """A spatial tree row's first coordinate (ISRI[3]) or first rate (ISRI[4]) near INT_MAX:
    first + count wrapped; the Euler parameters or the accelerations were written out of
    bounds (segfault)."""
    refused("double_wishbone", "ISRI", 6 * 3 + 3, INT_MAX - 3, "a tree joint's indices")
    refused("driven_arm", "ISRI", 6 * 2 + 4, INT_MAX, "a tree joint's indices")


def test_a_planar_free_body_without_coordinates_is_refused():
    """bouncing_ball's free body with first coordinate -1 (IJI[4], allowed for a joint without
    coordinates): its pose was read from q[-1..1] (heap buffer overflow under ASan)."""
    refused("bouncing_ball", "IJI", 4, -1, "a tree joint's indices")


def test_a_joint_without_coordinates_given_one_is_refused():
    """A spherical joint (spatial) or a weld (planar) whose coordinate index (IJOINT[3], -1)
    names a joint coordinate: the outputs wrote that coordinate's two values past the output
    vector (heap overflow under ASan; the count check came after the writes); a revolute
    joint whose coordinate index is another joint's was accepted alike."""
    refused("double_wishbone", "IJOINT", 6 * 5 + 3, 1, "a joint")
    refused("double_wishbone", "IJOINT", 6 * 0 + 3, 1, "a joint")
    refused("driven_arm", "IJOINT", 3, -1, "a joint")
    refused("container_crane", "IJOINT", 3, 1, "a joint")


def test_a_spatial_coordinate_of_another_kind_than_its_joint_is_refused():
    """A revolute joint's coordinate marked as a universal joint's first angle (ICOORD[1]):
    accepted, and the joint's rate output was NaN after a step that returned OK."""
    refused("driven_arm", "ICOORD", 1, 2, "a joint's coordinate index")
    refused("double_wishbone", "ICOORD", 5, 2, "a joint's coordinate index")


def test_a_tree_whose_parents_form_a_cycle_is_refused():
    """A tree row whose parent is a body placed after it (four_bar: body 0's parent body 1,
    whose parent is body 0): the kernels' walk from a body to the ground (add_path) never
    ended, mbe_do_step hung (more than 5 minutes); planar and spatial."""
    refused("four_bar", "IJI", 2, 1, "the tree's order", timeout=120)
    refused("four_bar", "IJI", 5, 0, "the tree's order", timeout=120)     # a body twice
    refused("driven_arm", "ISRI", 1, 1, "the tree's order", timeout=120)


def test_a_planar_joint_between_a_body_and_itself_is_refused():
    """A planar joint whose parent and child are the same (both the ground): accepted, and its
    reaction output read the row's Jacobian at the ground's columns, past the matrix (heap
    overflow under ASan); the spatial check refused it already."""
    refused("newtons_cradle", "IJOINT", 6 * 2 + 2, 3, "a joint")
