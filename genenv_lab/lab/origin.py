"""Refusing cross-site writes to the lab: an ASGI middleware that answers 403 to a state-changing request whose
``Origin`` is another site.

A page on another site can make a visitor's browser POST to ``http://127.0.0.1:7860`` (a "simple" request needs no
CORS preflight, and the reply need not be readable for the request to act), and the lab's Start tab starts runs. The
browser always says where such a request comes from in ``Origin``; a request from the lab's own page carries the
lab's own host there, and tools that are not browsers (``gradio_client``, ``curl``) send none. So a request whose
method can change state (not GET, HEAD or OPTIONS) and whose ``Origin`` names a host other than the one it was sent
to is refused. A page can also re-point its own name at 127.0.0.1 (DNS rebinding), so that its ``Origin`` and the
``Host`` it sends agree; a lab bound to loopback therefore answers only requests addressed to a loopback name.
Loopback names count as one host (a page opened as ``localhost`` posting to ``127.0.0.1``), and with a public share
link, the tunnel's own hosts (``*.gradio.live``) count as the lab's.

Starlette's ``CORSMiddleware`` (which Gradio installs) only decides which replies a browser may read; it lets the
request itself through, which is why this check is written here.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
SHARE_SUFFIX = ".gradio.live"


def _host_port(netloc: str, default_port: int | None) -> tuple[str, int | None]:
    """``(host, port)`` of ``host[:port]`` (IPv6 in brackets), the host lower-cased."""
    parts = urlsplit(f"//{netloc}")
    try:
        port = parts.port
    except ValueError:  # a port that is no number: no host this server answers as
        return "", None
    return (parts.hostname or "").lower(), port if port is not None else default_port


def same_site(origin: str, host_header: str, *, scheme: str = "http", share: bool = False) -> bool:
    """Whether a request sent to ``host_header`` from a page at ``origin`` comes from the lab's own page.

    >>> same_site("http://127.0.0.1:7860", "127.0.0.1:7860")
    True
    >>> same_site("http://localhost:7860", "127.0.0.1:7860")
    True
    >>> same_site("http://evil.example", "127.0.0.1:7860")
    False
    >>> same_site("http://localhost:9999", "127.0.0.1:7860")
    False
    >>> same_site("https://abc123.gradio.live", "127.0.0.1:7860", share=True)
    True
    """
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # "null" (a sandboxed page or a file://), or anything unparseable
    default = 443 if parts.scheme == "https" else 80
    o_host, o_port = _host_port(parts.netloc, default)
    h_host, h_port = _host_port(host_header, 443 if scheme == "https" else 80)
    if share and o_host.endswith(SHARE_SUFFIX):
        return True
    if o_host in LOOPBACK and h_host in LOOPBACK:
        return o_port == h_port
    return bool(o_host) and (o_host, o_port) == (h_host, h_port)


def host_allowed(host_header: str, loopback_only: bool, share: bool = False) -> bool:
    """Whether a request addressed to ``host_header`` may reach a lab bound to loopback (``loopback_only``): only
    under a loopback name (``localhost``, ``127.0.0.1``, ``::1``), or a share link's host. A page whose own name was
    re-pointed at 127.0.0.1 (DNS rebinding) addresses the lab by that name, and its ``Origin`` then matches its
    ``Host``: this is the check that refuses it. A lab bound to another address takes every host name (it was
    exposed on purpose, with the warning ``app.py`` prints).

    >>> host_allowed("127.0.0.1:7860", True), host_allowed("evil.example:7860", True)
    (True, False)
    """
    if not loopback_only:
        return True
    name, _ = _host_port(host_header, None)
    return name in LOOPBACK or (share and name.endswith(SHARE_SUFFIX))


def _refuse(body: str):
    data = body.encode()
    return [{"type": "http.response.start", "status": 403,
             "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                         (b"content-length", str(len(data)).encode())]},
            {"type": "http.response.body", "body": data}]


class SameOriginWrites:
    """ASGI middleware: every request's ``Host`` must be one the lab answers to (:func:`host_allowed`), and every
    request that can change state passes :func:`same_site`; a refused one gets 403 with one sentence, and nothing
    behind the middleware runs."""

    def __init__(self, app: Callable[..., Awaitable[Any]], share: bool = False, loopback_only: bool = False):
        self.app, self.share, self.loopback_only = app, share, loopback_only

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            host, origin = headers.get("host", ""), headers.get("origin")
            refusal = None
            if not host_allowed(host, self.loopback_only, self.share):
                refusal = (f"request to host {host[:200]!r} refused: this lab answers on this machine's loopback "
                           "names only (localhost, 127.0.0.1); a page re-pointing its own name here (DNS "
                           "rebinding) is refused")
            elif (scope["type"] == "websocket" or scope.get("method", "GET").upper() not in SAFE_METHODS) \
                    and origin is not None and not same_site(origin, host, scheme=scope.get("scheme", "http"),
                                                             share=self.share):
                refusal = (f"cross-site request refused: a page at {origin[:200]} may not act on the lab "
                           "(open the lab's own page, or call it without a browser)")
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                for message in _refuse(refusal):
                    await send(message)
                return
        await self.app(scope, receive, send)
