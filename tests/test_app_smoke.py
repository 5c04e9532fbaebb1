"""The Gradio lab served for real (in this process, on a free port) and queried through ``gradio_client``."""

from __future__ import annotations

import importlib.util
import inspect
import json
import socket
from pathlib import Path

import pytest

pytest.importorskip("gradio", reason="the lab needs the app extra: pip install -e '.[app]'")
pytest.importorskip("gradio_client", reason="the smoke test needs gradio_client")

from test_app_views import make_run  # noqa: E402 - after the skips

ROOT = Path(__file__).resolve().parent.parent


def load_app_module():
    """The lab's layout, :mod:`genenv_lab.lab.app` (the root ``app.py`` is its launcher)."""
    return importlib.import_module("genenv_lab.lab.app")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    make_run(runs / "syn")
    (runs / "empty").mkdir()
    (runs / "garbage").mkdir()
    (runs / "garbage" / "config.json").write_text("{oops")
    (runs / "garbage" / "state.json").write_text(json.dumps({"status": "finished", "last_complete_epoch": 0}))
    app = load_app_module()
    demo = app.build_app(runs)
    port = free_port()
    app.launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", demo
    finally:
        demo.close()


def test_runs_list_and_run_summary_through_gradio_client(lab):
    from gradio_client import Client

    url, demo = lab
    assert demo.server_name == "127.0.0.1"  # binds this machine only unless --host says otherwise
    client = Client(url, verbose=False)
    rows = client.predict(api_name="/list_runs")
    by_name = {row["run"]: row for row in rows}
    assert set(by_name) == {"syn", "empty", "garbage"}
    assert by_name["syn"]["status"].endswith("finished") and by_name["syn"]["epochs"] == "3 / 3"
    assert by_name["empty"]["status"].endswith("empty")

    card = client.predict("syn", api_name="/run_summary")
    assert "syn" in card and "finished" in card and "α = 0.5" in card
    assert "config.json is unreadable" in client.predict("garbage", api_name="/run_summary")
    for evil in ("../etc", "/etc/passwd", "..", "syn/../../x"):
        assert "not allowed" in client.predict(evil, api_name="/run_summary")

    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert {"/list_runs", "/run_summary"} <= set(endpoints)
    assert not any("start" in name or "stop" in name for name in endpoints)  # starting runs is UI-only


def test_page_is_served(lab):
    import httpx

    url, _ = lab
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200 and "GenEnv lab" in response.text


def test_defaults_bind_localhost_and_never_share():
    app = load_app_module()
    params = inspect.signature(app.launch).parameters
    assert params["host"].default == "127.0.0.1" and params["share"].default is False
    assert app.DEFAULT_RUNS == Path("runs")  # genenv-lab lab: runs/ of the working folder
    launcher = (ROOT / "app.py").read_text()  # python app.py: the few-line launcher, runs/ beside it
    assert len(launcher.splitlines()) <= 20 and 'main(default_runs=Path(__file__).resolve().parent / "runs"' in launcher


def test_uploads_are_bounded_and_an_exposed_address_is_named_with_a_warning(lab, tmp_path):
    """Round 4, failure 16: a 100 MB upload was accepted (the lab uploads nothing); ``--host 0.0.0.0`` printed
    ``localhost`` and no warning that anyone who reaches the port can start runs."""
    import httpx

    url, _ = lab
    response = httpx.post(url + "gradio_api/upload", files={"files": ("big.bin", b"\0" * (2 * 2**20))}, timeout=60)
    assert response.status_code >= 400
    app = load_app_module()
    assert not app.exposed("127.0.0.1") and not app.exposed("localhost") and not app.exposed("::1")
    assert app.exposed("0.0.0.0") and app.exposed("192.0.2.7") and app.exposed("lab.example")
    assert "every interface" in app.served_url("http://localhost:7860/", "0.0.0.0")
    assert app.served_url("http://localhost:7860/", "192.0.2.7") == "http://192.0.2.7:7860/"
    assert app.served_url("http://localhost:7860/", "127.0.0.1") == "http://localhost:7860/"


def test_a_write_from_another_sites_page_is_refused_and_the_labs_own_page_is_served(lab):
    """Round 4, L6: a POST carrying ``Origin: http://evil.example`` was processed, so a page on any site could act
    on the lab (start runs) through a visitor's browser. It is refused with 403 and one sentence; the lab's own
    origin, a loopback alias of it and a client that sends no ``Origin`` (gradio_client, curl) go through."""
    import httpx

    url, _ = lab
    port = url.rstrip("/").rsplit(":", 1)[1]
    upload = url + "gradio_api/upload"

    def post(origin):
        headers = {"Origin": origin} if origin else {}
        return httpx.post(upload, files={"files": ("a.txt", b"x")}, headers=headers, timeout=30)

    refused = post("http://evil.example")
    assert refused.status_code == 403 and "cross-site request refused" in refused.text
    assert post(f"http://localhost:{int(port) + 1}").status_code == 403  # another server on this machine
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", None):
        assert post(origin).status_code == 200, origin
    assert httpx.get(url, headers={"Origin": "http://evil.example"}, timeout=30).status_code == 200  # reads pass
    # round 5: DNS rebinding. A page whose own name now resolves to 127.0.0.1 sends matching Host and Origin; a lab
    # bound to loopback answers loopback names only, reads included
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    join = httpx.post(url + "gradio_api/queue/join", headers=rebound, timeout=30,
                      json={"data": ["syn"], "fn_index": 1, "session_hash": "abc123"})
    assert join.status_code == 403 and "DNS rebinding" in join.text
    assert httpx.get(url, headers={"Host": f"evil.example:{port}"}, timeout=30).status_code == 403
    assert httpx.get(url, headers={"Host": f"localhost:{port}"}, timeout=30).status_code == 200


def test_a_file_named_like_the_start_notes_folder_is_one_refusal(tmp_path):
    """Round 4, failure 16: a plain file ``.lab-launches`` in the runs folder made every Start fail with a
    FileExistsError traceback."""
    from genenv_lab.lab.launcher import LAUNCHES, start_run
    from genenv_lab.lab.names import LabError

    (tmp_path / LAUNCHES).write_text("not a folder")
    with pytest.raises(LabError, match="start notes"):
        start_run(tmp_path, "tiny", "arith", name="r1")
    assert not (tmp_path / "r1").exists()


def test_first_render_shows_the_chosen_or_newest_run(tmp_path):
    import gradio as gr

    from genenv_lab.lab.names import LabError

    make_run(tmp_path / "runs" / "syn")
    app = load_app_module()

    def first_values(demo):
        blocks = list(demo.blocks.values())
        dropdown = next(b for b in blocks if isinstance(b, gr.Dropdown) and b.label == "Run")
        plots = [b for b in blocks if isinstance(b, gr.Plot) and b.visible]  # the story shows only beside a twin
        return dropdown.value, [p.value for p in plots[:2]]

    for chosen in ("syn", None):  # --run syn, and the newest run by default
        value, plots = first_values(app.build_app(tmp_path / "runs", run=chosen))
        assert value == "syn"
        assert all(p is not None for p in plots)  # histogram and curves drawn before any event
    with pytest.raises(LabError, match="no such run"):
        app.build_app(tmp_path / "runs", run="nope")
    value, plots = first_values(app.build_app(tmp_path / "empty-root"))
    assert value is None and all(p is None for p in plots)


def test_the_start_form_offers_the_chosen_presets_domain(tmp_path):
    """The Domain dropdown starts at the default preset's domain and follows the Preset dropdown (cpu-demo: count)."""
    import gradio as gr

    from genenv_lab.lab import launcher

    demo = load_app_module().build_app(tmp_path / "runs")
    blocks = list(demo.blocks.values())
    preset_dd = next(b for b in blocks if isinstance(b, gr.Dropdown) and b.label == "Preset")
    domain_dd = next(b for b in blocks if isinstance(b, gr.Dropdown) and b.label == "Domain")
    assert domain_dd.value == launcher.preset_domain(preset_dd.value)
    fns = demo.fns.values() if isinstance(demo.fns, dict) else demo.fns
    on_change = [f for f in fns if (preset_dd._id, "change") in f.targets]
    assert len(on_change) == 1 and on_change[0].outputs == [domain_dd]
    assert on_change[0].fn("cpu-demo") == "count" and on_change[0].fn("cpu-times") == "times"


def test_empty_tables_show_their_column_names(tmp_path):
    import gradio as gr

    app = load_app_module()
    demo = app.build_app(tmp_path / "no-runs-yet")
    tables = [b for b in demo.blocks.values()
              if isinstance(b, gr.Dataframe) and b.label != "Runs started in this session"]
    assert len(tables) == 7
    for table in tables:
        headers = table.value["headers"]
        assert headers and headers != [str(i) for i in range(1, len(headers) + 1)], table.label


def test_one_slow_view_does_not_hold_every_users_view(tmp_path):
    """Views of runs (and of comparisons) share a few slots across users, not one: a huge or hostile run's view
    holds one slot while another user's view of an intact run is drawn (with one slot it waited behind it)."""
    app = load_app_module()
    demo = app.build_app(tmp_path / "runs")
    fns = demo.fns.values() if isinstance(demo.fns, dict) else demo.fns
    limits = {f.concurrency_id: f.concurrency_limit for f in fns if f.concurrency_id in ("view", "comparison")}
    assert limits == {"view": app.VIEW_SLOTS, "comparison": app.VIEW_SLOTS} and app.VIEW_SLOTS > 1


def test_cards_of_refused_or_missing_names_escape_the_name_and_name_no_server_path(tmp_path):
    """Round 4, L6: a name with a newline or U+202E was echoed into the card's heading; a plain file was said to
    "not exist (deleted or renamed?)"; the messages named absolute server paths."""
    runs = tmp_path / "runs"
    make_run(runs / "syn")
    (runs / "plainfile").write_text("not a run")
    lab = load_app_module().Lab(runs.resolve())
    card = lab.run_summary("a\nb\u202e")
    heading = card.splitlines()[0]
    assert "\u202e" not in card and "a\\nb\\u202e" in heading and "not allowed" in card
    assert "is a file, not a folder" in lab.run_summary("plainfile")
    assert "does not exist (deleted or renamed?)" in lab.run_summary("gone")
    for name in ("plainfile", "gone", "a\nb"):
        assert str(tmp_path) not in lab.run_summary(name)
