"""The figures' shared style, one source for every plot of the package (the notebooks' plots, the comparison report,
the lab): the α band's fill and edge, the α line's colour, the run colours and the plotly template."""

from __future__ import annotations

BAND_FILL = "rgba(12, 166, 120, 0.13)"
"""The band [α − k_min, α + k_min], shaded."""
BAND_LINE = "#0ca678"
"""The band's edges, where drawn as lines."""
ALPHA_COLOUR = "#2b8a3e"
"""The α line and the band's label."""
RUN_COLORS = ("#4263eb", "#f76707", "#0ca678", "#ae3ec9", "#e03131", "#1098ad", "#74b816", "#f59f00")
"""One colour per run or arm, in order."""
TEMPLATE = "plotly_white"
