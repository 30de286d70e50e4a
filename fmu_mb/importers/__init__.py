"""Robot description import: URDF (urdf.py, through yourdfpy) and MJCF (mjcf.py, through
MuJoCo's own compiler) into spatial Models (robot.py); docs/import.md."""
