"""The lab inline in a notebook: one call, :func:`show`, serves the lab (``app.py``) on this machine's loopback
address and shows it in the cell's output.

- In Colab, through the kernel's proxy (``google.colab.output.serve_kernel_port_as_iframe``): the frame reaches the
  runtime's 127.0.0.1 through the browser tab that owns the runtime; the proxied address is read with
  ``google.colab.kernel.proxyPort``. Colab's own Gradio default (``share=True``, a public gradio.live link that
  expires after 72 h) is not used.
- In Jupyter (or any IPython front end), an ``IFrame`` of ``http://127.0.0.1:PORT/``.
- A public share link (gradio.live) only with ``share=True``.

The lab binds 127.0.0.1 only and is told to contact no other host: Gradio's analytics are off
(``GRADIO_ANALYTICS_ENABLED=False``), and no share tunnel starts unless asked (tests/test_lab_inline.py records
every connection the call makes).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


@dataclass
class Inline:
    """What :func:`show` started: the address the notebook shows (Colab's proxied one there), the local one, the
    port, where it is shown (``colab``, ``jupyter`` or ``none``), the public link if one was asked for, and the
    Gradio app (``inline.close()`` stops it)."""

    url: str
    local_url: str
    port: int
    where: str
    share_url: str | None
    demo: Any

    def close(self) -> None:
        self.demo.close()


def free_port() -> int:
    """A free TCP port on the loopback address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def app_module():
    """The lab's Gradio layout, :mod:`genenv_lab.lab.app` (inside the package: any install serves it)."""
    return importlib.import_module(__package__ + ".app")


def where_am_i() -> str:
    """``colab`` inside a Colab kernel, ``jupyter`` inside another IPython kernel, ``none`` elsewhere."""
    if "google.colab" in sys.modules:
        return "colab"
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return "jupyter" if ip is not None and getattr(ip, "kernel", None) is not None else "none"


def show(runs: str | Path = "runs", *, run: str | None = None, port: int | None = None, share: bool = False,
         height: int = 900, where: str | None = None) -> Inline:
    """Serve the lab on runs folder ``runs`` (``run``: the run shown first) at ``127.0.0.1:port`` (a free port by
    default) and show it in this cell's output: Colab's kernel proxy in Colab, an IFrame in Jupyter, nothing
    outside a notebook (``where`` overrides the guess: ``colab``, ``jupyter`` or ``none``). ``share=True`` also
    opens a public gradio.live link (anyone with it reaches the lab, which has no login). Returns an
    :class:`Inline`; call its ``close()`` to stop the server."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # read when the Blocks are built
    app = app_module()
    demo = app.build_app(runs, run=run, compact=True)
    port = port or free_port()
    _, local_url, share_url = app.launch(demo, host=LOOPBACK, port=port, share=share, quiet=True,
                                         prevent_thread_lock=True, inline=False)
    local_url = local_url.replace("localhost", LOOPBACK)  # Gradio says localhost; 127.0.0.1 is what was bound
    where = where or where_am_i()
    url = local_url
    if where == "colab":
        from google.colab import output  # the kernel proxy: the browser tab that owns the runtime reaches it

        url = output.eval_js(f"google.colab.kernel.proxyPort({port})")
        output.serve_kernel_port_as_iframe(port, height=str(height))
    elif where == "jupyter":
        from IPython.display import IFrame, display

        display(IFrame(src=local_url, width="100%", height=height))
    if share_url:
        print(f"public link (no login: anyone with it can read the runs and start runs): {share_url}")
    return Inline(url=url, local_url=local_url, port=port, where=where, share_url=share_url, demo=demo)
