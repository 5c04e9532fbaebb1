"""The run directory, the only interface between training and what reads a run (the lab, ``compare``, the trackers):
its layout, its writer, its reader, the registry of the metrics an epoch logs, and what is computed from them."""
