"""Gradio components the lab adjusts (imported by ``app.py``; needs the ``app`` extra)."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd


def with_placeholder_row(value: Any) -> Any:
    """One ``(none)`` row in place of an empty body: gradio 6 draws a table without rows under placeholder headers
    1 2 3 (seen in the browser at 1280 px), hiding the column names."""
    if isinstance(value, pd.DataFrame) and len(value) == 0 and len(value.columns):
        return pd.DataFrame([["(none)"] + [""] * (len(value.columns) - 1)], columns=value.columns)
    return value


def Table(value: Any = None, **kwargs: Any) -> gr.Dataframe:  # named like the component it builds
    """A ``gr.Dataframe`` whose every value (initial and updates) goes through :func:`with_placeholder_row`.

    A wrapper rather than a subclass: gradio writes a ``.pyi`` stub next to the module of every Component subclass
    when it is defined, which a read-only install cannot take."""
    table = gr.Dataframe(with_placeholder_row(value), **kwargs)
    postprocess = table.postprocess
    table.postprocess = lambda v: postprocess(with_placeholder_row(v))  # type: ignore[method-assign]
    return table
