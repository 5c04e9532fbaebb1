"""The GenEnv lab's launcher: ``python app.py [--runs DIR] [--host 127.0.0.1] [--port 7860] [--share] [--run NAME]``
serves the lab over ``--runs`` (default: ``runs/`` beside this file).

The lab itself (layout and wiring) is ``genenv_lab/lab/app.py``, inside the package, so that an installed wheel
serves it too (``genenv-lab lab``, ``genenv_lab.lab.inline.show``); its names are re-exported here for the scripts
and tests that load this file.
"""

from pathlib import Path

from genenv_lab.lab.app import DEFAULT_RUNS, Lab, build_app, exposed, launch, main, served_url  # noqa: F401

if __name__ == "__main__":
    main(default_runs=Path(__file__).resolve().parent / "runs", prog="python app.py")
