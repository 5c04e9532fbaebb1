"""The lab inline in a notebook (genenv_lab/lab/inline.py): one call serves it on 127.0.0.1 and returns where it is
shown, contacting no other host; in Colab through the kernel proxy, with no share link unless asked.

Colab's ``google.colab.output`` cannot run outside Colab, so the Colab case records the calls the function makes
to it (the proxy's two entry points) with a stand-in module; everything else (Gradio, the lab, the server) is real.
"""

from __future__ import annotations

import socket
import sys
import types
import urllib.request

import pytest

from genenv_lab.lab import inline

LOCAL = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture
def hosts(monkeypatch):
    """Every host this process connects to (or resolves) while the test runs."""
    seen: list[str] = []
    connect, resolve = socket.socket.connect, socket.getaddrinfo

    def recording_connect(self, address):
        if isinstance(address, tuple):
            seen.append(str(address[0]))
        return connect(self, address)

    def recording_resolve(host, *args, **kwargs):
        seen.append(host.decode() if isinstance(host, bytes) else str(host))
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", recording_connect)
    monkeypatch.setattr(socket, "getaddrinfo", recording_resolve)
    return seen


def test_in_jupyter_it_serves_on_loopback_and_contacts_no_other_host(tmp_path, hosts):
    (tmp_path / "runs").mkdir()
    lab = inline.show(tmp_path / "runs", where="jupyter", height=500)
    try:
        assert lab.where == "jupyter" and lab.share_url is None
        assert lab.url == lab.local_url and lab.url.startswith(f"http://127.0.0.1:{lab.port}")
        with urllib.request.urlopen(lab.local_url, timeout=30) as page:
            assert page.status == 200 and b"GenEnv" in page.read()
    finally:
        lab.close()
    assert hosts and set(hosts) <= LOCAL, f"contacted {sorted(set(hosts) - LOCAL)}"


def test_in_colab_it_shows_the_lab_through_the_kernel_proxy(tmp_path, hosts, monkeypatch):
    calls = []
    output = types.SimpleNamespace(
        eval_js=lambda js: calls.append(("eval_js", js)) or "https://proxy.example/",
        serve_kernel_port_as_iframe=lambda port, height: calls.append(("iframe", port, height)))
    colab = types.ModuleType("google.colab")
    colab.output = output
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.output", output)
    (tmp_path / "runs").mkdir()
    lab = inline.show(tmp_path / "runs", height=600)
    try:
        assert lab.where == "colab" and lab.url == "https://proxy.example/" and lab.share_url is None
        assert calls == [("eval_js", f"google.colab.kernel.proxyPort({lab.port})"), ("iframe", lab.port, "600")]
    finally:
        lab.close()
    assert set(hosts) <= LOCAL, f"contacted {sorted(set(hosts) - LOCAL)}"


def test_the_app_is_found_beside_the_package():
    module = inline.app_module()
    assert callable(module.build_app) and callable(module.launch)
