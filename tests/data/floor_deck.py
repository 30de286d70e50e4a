"""A deck hung from the ground by two parallel links of length L (a parallelogram: a closed
loop of four revolute joints, one of them cut) resting on a floor: released with the
links tilted by `tilt` (at rest, or at the links' angular `rate`) and the deck's bottom `gap` above the floor, it swings down (along
-(cos tilt, sin tilt) per unit of the links' angle) onto the floor, and a Box shape on the
deck (four corners; `dim` "2d": two corner contacts of a planar model) stays on it, wedged
by the loop: the floor's normal forces alone hold it, so how the load is shared between the
corners and the joints is the minimum-norm rule's (docs/contacts-friction.md). Coulomb
friction `mu`; restitution `e`. `cut` (structural) declares the joints so that the engine's
tree cuts hinge1 (the default) or hinge0."""
import math

from fmu_mb import Box, ModelBuilder, Plane

G = 9.81
DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}
L, W, HP = 0.3, 0.4, 0.02          # the links' length, their spacing, the deck's thickness
PAD = (0.2, 0.1)                   # the deck's Box shape: length (x), width (y)
M_DECK, M_LINK = 2.0, 0.3


def build(**overrides):
    dim = overrides.get("dim", "3d")
    mb = ModelBuilder("floor_deck", overrides,
                      gravity=(0.0, 0.0, -G) if dim == "3d" else (0.0, -G))
    mb.param("dim", "3d", "1", "a spatial or a planar model", choices=("3d", "2d"),
             structural=True)
    mu = mb.param("mu", 3.0, "1", "Coulomb friction coefficient of the floor", min=0.0)
    e = mb.param("e", 0.0, "1", "coefficient of restitution of the floor", min=0.0, max=1.0)
    tilt = mb.param("tilt", 0.4, "rad", "initial angle of the links to the vertical")
    gap = mb.param("gap", 0.0, "m", "initial height of the deck above the floor", min=0.0)
    rate = mb.param("rate", 0.0, "rad/s", "initial rate of the links' angle (joint pivot0)")
    cut = mb.param("cut", "hinge1", "1", "the joint the tree cuts", choices=("hinge1", "hinge0"),
                   structural=True)
    s, co = math.sin(tilt), math.cos(tilt)
    px, pz = W / 2 + L * s, -L * co
    floor = pz - HP / 2 - gap
    if dim == "3d":
        links = [mb.body(f"link{k}", mass=M_LINK, inertia=(2e-3, 2e-3, 1e-4),
                         position=(x0 + L / 2 * s, 0.0, -L / 2 * co),
                         orientation=(math.cos(tilt / 2), 0.0, math.sin(tilt / 2), 0.0))
                 for k, x0 in enumerate((0.0, W))]
        deck = mb.body("deck", mass=M_DECK, inertia=(0.01, 0.03, 0.04), position=(px, 0.0, pz))
    else:
        links = [mb.body(f"link{k}", mass=M_LINK, inertia=2e-3,
                         position=(x0 + L / 2 * s, -L / 2 * co), angle=tilt - math.pi / 2)
                 for k, x0 in enumerate((0.0, W))]
        deck = mb.body("deck", mass=M_DECK, inertia=0.03, position=(px, pz))

    def pivot(k):
        x0 = (0.0, W)[k]
        if dim == "3d":
            mb.revolute(f"pivot{k}", mb.ground, links[k], at=(x0, 0.0, 0.0),
                        axis=(0.0, 1.0, 0.0))
        else:
            mb.revolute(f"pivot{k}", mb.ground, links[k], parent_point=(x0, 0.0),
                        child_point=(-L / 2, 0.0))

    def hinge(k):
        x0 = (0.0, W)[k]
        if dim == "3d":
            mb.revolute(f"hinge{k}", links[k], deck, at=(x0 + L * s, 0.0, -L * co),
                        axis=(0.0, 1.0, 0.0))
        else:
            mb.revolute(f"hinge{k}", links[k], deck, parent_point=(L / 2, 0.0),
                        child_point=(x0 - W / 2, 0.0))

    # the tree grows breadth-first from the ground in declaration order: the hinge of the
    # link declared last closes the loop
    order = (0, 1) if cut == "hinge1" else (1, 0)
    for k in order:
        pivot(k)
    for k in order:
        hinge(k)
    if rate:
        mb.initial("pivot0", rate=rate)
    if dim == "3d":
        mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), position=(0.0, 0.0, floor),
                 name="floor", friction=mu, restitution=e)
        mb.shape(deck, Box((PAD[0], PAD[1], HP)), name="pad")
    else:
        for k, sx in enumerate((-1, 1)):
            mb.contact(f"floor_pad_{2 * k}", deck, (sx * PAD[0] / 2, -HP / 2), normal=(0.0, 1.0),
                       line_point=(0.0, floor), restitution=e, friction=mu)
    return mb.build()
