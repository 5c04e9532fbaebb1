"""Gradio components the lab adjusts (imported by ``app.py``; needs the ``app`` extra)."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd


class Table(gr.Dataframe):
    """A ``gr.Dataframe`` that shows one ``(none)`` row instead of an empty body: gradio 6 draws a table without
    rows under placeholder headers 1 2 3 (seen in the browser at 1280 px), hiding the column names."""

    def get_block_name(self) -> str:
        return "dataframe"  # the frontend component to use (by default the class name)

    def postprocess(self, value: Any) -> Any:
        if isinstance(value, pd.DataFrame) and len(value) == 0 and len(value.columns):
            value = pd.DataFrame([["(none)"] + [""] * (len(value.columns) - 1)], columns=value.columns)
        return super().postprocess(value)
