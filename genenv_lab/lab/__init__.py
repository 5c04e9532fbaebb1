"""The lab: what ``python app.py`` shows, as plain Python that needs no Gradio.

- :mod:`.runs`: find run directories under a runs folder, validate run names (a name from the browser never
  reaches outside that folder), read one run into a :class:`~.runs.RunData` that never raises for a corrupt or
  half-written directory (its ``problems`` say what is wrong), and tell a run's status.
- :mod:`.views`: pure view functions, :class:`~.runs.RunData` in, pandas DataFrames, Markdown and plotly figures
  out. ``app.py`` only lays them out and wires them to Gradio events.
- :mod:`.figures`: the run's figures; its per-epoch curves are assembled from the panel table of :mod:`.panels`
  (one entry and one small builder a panel).
- :mod:`.folder`: what the lab reads over one runs folder (runs and comparisons by name, the first view, the API
  endpoints), without Gradio; :mod:`.callbacks` (Gradio) builds ``app.py``'s callbacks on it.
- :mod:`.launcher`: start a preset run as a separate process and stop it (presets only, never a command).

The run directory (``docs/run_directory.md``) is the only interface between training and the lab.
"""

from genenv_lab.lab.names import LabError, resolve_run, validate_run_name
from genenv_lab.lab.runs import RunData, RunSummary, discover_runs, load_run

__all__ = ["LabError", "RunData", "RunSummary", "discover_runs", "load_run", "resolve_run", "validate_run_name"]
