"""Model exchange in the native FMUs: one FMU, both interfaces.

The native FMU's binary (fmi2_native.c with me2.c; fmi3_native.c with me3.c) serves an
instance made for co-simulation and one made for model exchange from the same variables; this
module declares the second interface in modelDescription.xml when the FMU has continuous
states (native_build._linear_structure's: the independent coordinates and their rates):

- FMI 2.0: <ModelExchange modelIdentifier=...> with the co-simulation's modelIdentifier (the
  same binary) and numberOfEventIndicators;
- FMI 3.0: <ModelExchange> and, per event indicator, a local continuous Float64 variable
  (value references after `time`) listed in ModelStructure as <EventIndicator>.

The event indicators, in the binary's order (engine_me.h): per contact its event value (the
gap in flight, the normal force while persistent), then, when the model has dependent
coordinates (closed loops, Euler parameters), the coordinate partition's condition minus 1e-3,
then, when three of the four Euler parameters of a spherical tree joint or a floating body are
states, the charts' indicator: the smallest |l_d| of their local quaternions minus 0.5 (the
model-exchange states of those Euler parameters are chart coordinates relative to a reference
orientation that Event Mode re-centres where this indicator crosses zero).
"""
import xml.etree.ElementTree as ET

#: the partition's threshold of engine_me.h ME_PARTITION_TOL
PARTITION_TOL = 1e-3
#: the charts' threshold of engine_me.h ME_CHART_TOL
CHART_TOL = 0.5


def chart_count(model, linear):
    """The number of charts of engine_me.h: tree quaternions (spherical tree joints, floating
    bodies) with exactly three of their four Euler parameters among the states."""
    if not model.spatial:
        return 0
    from ..mechanics.spatial import tree as st
    held = set(linear["independent"])
    return sum(1 for o in st.tree_map(model).norm
               if sum(int(o) + a in held for a in range(4)) == 3)


def event_indicators(model, linear):
    """[(name, description)] of the model-exchange event indicators, in the binary's order;
    None when the FMU has no model-exchange interface (no continuous states, or Coulomb
    friction at a contact or a joint: engine_me.h's event iteration has no stick/slip phases,
    so a frictional model is co-simulation only)."""
    if not linear or not linear["independent"]:
        return None
    if any(getattr(c, "friction", 0.0) > 0.0 for c in getattr(model, "contacts", ())):
        return None
    if any(getattr(j, "friction", 0.0) > 0.0 for j in model.joints):
        return None                   # (joint friction: the same stick/slip phases)
    out = [(f"{c.name}.event_indicator",
            f"contact {c.name}: its gap while apart, its normal force while in persistent "
            f"contact (model exchange's event indicator) [m or rad, or N or N.m]")
           for c in model.contacts]
    if linear["n"] > len(linear["independent"]):
        out.append(("partition.event_indicator",
                    f"condition of the loops' coordinate partition chosen at initialisation "
                    f"minus {PARTITION_TOL:g} (model exchange's event indicator: negative "
                    f"where the independent coordinates approach a singular partition) [1]"))
    if chart_count(model, linear):
        out.append(("chart.event_indicator",
                    f"smallest |l_d| of the local quaternions whose three other Euler "
                    f"parameters are the model-exchange states (chart coordinates relative to a "
                    f"reference orientation) minus {CHART_TOL:g}: where it crosses zero, Event "
                    f"Mode re-centres the chart (model exchange's event indicator) [1]"))
    return out


def _me_attributes(cosim):
    return {"modelIdentifier": cosim.get("modelIdentifier"), "needsExecutionTool": "false",
            "completedIntegratorStepNotNeeded": "true",
            "canBeInstantiatedOnlyOncePerProcess": "false",
            "canNotUseMemoryManagementFunctions": "true",
            "canGetAndSetFMUstate": "true", "canSerializeFMUstate": "true",
            "providesDirectionalDerivative": cosim.get("providesDirectionalDerivative",
                                                       "false")}


def add_model_exchange(root, model, linear):
    """Add <ModelExchange> (the co-simulation's modelIdentifier and sources) and
    numberOfEventIndicators to the FMI 2.0 modelDescription root; returns the number of
    event indicators, or None when the FMU gets no model-exchange interface."""
    indicators = event_indicators(model, linear)
    if indicators is None:
        return None
    cosim = root.find("CoSimulation")
    me = ET.Element("ModelExchange", _me_attributes(cosim))
    listed = cosim.find("SourceFiles")
    if listed is not None:
        copy = ET.SubElement(me, "SourceFiles")
        for f in listed:
            ET.SubElement(copy, "File", dict(f.attrib))
    root.insert(list(root).index(cosim), me)
    root.set("numberOfEventIndicators", str(len(indicators)))
    return len(indicators)


def add_model_exchange3(root3, model, linear):
    """Add <ModelExchange> and the event indicators (variables after `time`, ModelStructure's
    EventIndicator) to the FMI 3.0 modelDescription root3; returns their number, or None."""
    indicators = event_indicators(model, linear)
    if indicators is None:
        return None
    cosim = root3.find("CoSimulation")
    attrs = {"modelIdentifier": cosim.get("modelIdentifier"), "needsExecutionTool": "false",
             "canBeInstantiatedOnlyOncePerProcess": "false", "canGetAndSetFMUState": "true",
             "canSerializeFMUState": "true",
             "providesDirectionalDerivatives": cosim.get("providesDirectionalDerivatives",
                                                         "false"),
             "providesAdjointDerivatives": "false", "providesPerElementDependencies": "false",
             "needsCompletedIntegratorStep": "false", "providesEvaluateDiscreteStates": "false"}
    root3.insert(list(root3).index(cosim), ET.Element("ModelExchange", attrs))
    mv = root3.find("ModelVariables")
    time_vr = int(next(v for v in mv if v.get("name") == "time").get("valueReference"))
    ms = root3.find("ModelStructure")
    # EventIndicator after Output, ContinuousStateDerivative, ClockedState, InitialUnknown
    at = len(ms)
    for k, (name, description) in enumerate(indicators):
        vr = str(time_vr + 1 + k)
        ET.SubElement(mv, "Float64", name=name, valueReference=vr, description=description,
                      causality="local", variability="continuous", initial="calculated")
        ms.insert(at + k, ET.Element("EventIndicator", valueReference=vr))
    return len(indicators)


def header_lines(count):
    """fmu_model.h's model-exchange lines (me2.c)."""
    if count is None:
        return ["#define FMU_HAS_ME 0", "#define FMU_N_EVENT_INDICATORS 0"]
    return ["#define FMU_HAS_ME 1", f"#define FMU_N_EVENT_INDICATORS {count}"]
