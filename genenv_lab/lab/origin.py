"""Refusing cross-site writes to the lab: an ASGI middleware that answers 403 to a state-changing request whose
``Origin`` is another site.

A page on another site can make a visitor's browser POST to ``http://127.0.0.1:7860`` (a "simple" request needs no
CORS preflight, and the reply need not be readable for the request to act), and the lab's Start tab starts runs. The
browser always says where such a request comes from in ``Origin``; a request from the lab's own page carries the
lab's own host there, and tools that are not browsers (``gradio_client``, ``curl``) send none. So a request whose
method can change state (not GET, HEAD or OPTIONS) and whose ``Origin`` names a host other than the one it was sent
to is refused. Loopback names count as one host (a page opened as ``localhost`` posting to ``127.0.0.1``), and with
a public share link, the tunnel's own hosts (``*.gradio.live``) count as the lab's.

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


class SameOriginWrites:
    """ASGI middleware: :func:`same_site` applied to every HTTP request that can change state; a refused one gets
    403 with one sentence, and nothing behind the middleware runs."""

    def __init__(self, app: Callable[..., Awaitable[Any]], share: bool = False):
        self.app, self.share = app, share

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") == "http" and scope.get("method", "GET").upper() not in SAFE_METHODS:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            origin = headers.get("origin")
            if origin is not None and not same_site(origin, headers.get("host", ""),
                                                    scheme=scope.get("scheme", "http"), share=self.share):
                body = (f"cross-site request refused: a page at {origin[:200]} may not act on the lab "
                        "(open the lab's own page, or call it without a browser)").encode()
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
