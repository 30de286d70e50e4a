"""`python -m fmu_mb ...` runs the fmu-mb command line (same as the `fmu-mb` script)."""
import sys

from .tools.cli import main

sys.exit(main())
