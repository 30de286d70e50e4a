"""The 3-D viewer's scene and page (scene.py) and its scripts (assets/): used by fmu-mb view and
animate (fmu_mb.tools.view) and by every FMU's documentation/index.html (fmu_mb.fmi.build)."""
