"""Serving the lab (needs the ``app`` extra): its theme and CSS, :func:`launch` (which refuses cross-site writes and
bounds uploads), whether a bound host lets other machines in (:func:`exposed`) and the address to print
(:func:`served_url`)."""

from __future__ import annotations

import ipaddress
from typing import Any

import gradio as gr

from genenv_lab.lab.origin import SameOriginWrites

CSS = """
.lab-header h1 {margin-bottom: 0; font-size: 1.7rem;}
.lab-header p {margin-top: 2px; color: var(--body-text-color-subdued);}
.run-card {padding: 4px 14px !important; background: var(--background-fill-secondary) !important;
           border-radius: 8px !important;}
.run-card blockquote {margin: 4px 0; color: #c92a2a;}
.story-caption {padding: 0 14px; color: var(--body-text-color-subdued);}
.runs-table th, .runs-table th * {white-space: nowrap !important;}
"""
MAX_UPLOAD = "1mb"
"""The most Gradio's upload route takes (the lab itself uploads nothing)."""


def theme() -> gr.themes.Base:
    local = ["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"]
    return gr.themes.Soft(primary_hue="indigo", secondary_hue="teal", neutral_hue="slate", font=local,
                          font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])


def launch(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int | None = 7860, share: bool = False,
           **kwargs: Any):
    """Launch ``demo`` with the lab's theme and CSS (Gradio 6 takes them at launch), refusing cross-site writes
    (:mod:`genenv_lab.lab.origin`: a page on another site could otherwise start runs through a visitor's browser)."""
    from starlette.middleware import Middleware

    guard = Middleware(SameOriginWrites, share=share, loopback_only=not exposed(host))
    app_kwargs = {"middleware": [guard], **kwargs.pop("app_kwargs", {})}
    # the lab has no upload component: Gradio's upload route still takes files, so bound it (round 4, failure 16)
    return demo.launch(server_name=host, server_port=port, share=share, theme=theme(), css=CSS,
                       ssr_mode=False, footer_links=["api"], max_file_size=MAX_UPLOAD, app_kwargs=app_kwargs,
                       **kwargs)


def exposed(host: str) -> bool:
    """Whether binding ``host`` lets other machines reach the lab (anything but a loopback address)."""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: whatever it resolves to, nothing says it is this machine only
        return True


def served_url(local_url: str, host: str) -> str:
    """The address to print: Gradio says ``localhost`` whatever was bound."""
    if host in ("0.0.0.0", "::"):
        return f"{local_url} (bound on every interface: {host})"
    return local_url.replace("localhost", host) if exposed(host) else local_url
