"""A trained agent leaves its run: `generate` answers with it, `export` writes a folder that a fresh process with
only transformers and peft loads with the standard calls and generates from (adapter and merged)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from genenv_lab.cli.commands import main

LOAD = """
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
out, merged = sys.argv[1], sys.argv[2] == "merged"
tokenizer = AutoTokenizer.from_pretrained(out)
if merged:
    model = AutoModelForCausalLM.from_pretrained(out)
else:
    from peft import PeftModel
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(out + "/base"), out)
ids = tokenizer.apply_chat_template([{"role": "user", "content": "Count from 2 to 6."}], add_generation_prompt=True,
                                    return_tensors="pt", return_dict=True)
new = model.generate(**ids, max_new_tokens=8, do_sample=False)[0, ids["input_ids"].shape[1]:]
print("ANSWER", repr(tokenizer.decode(new, skip_special_tokens=True)))
assert not [m for m in sys.modules if m.startswith("genenv_lab")]
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("export") / "run"
    assert main(["run", "--preset", "tiny", "--domain", "count", "--epochs", "1", "--eval.every", "1",
                 "--eval.benchmark", "domain", "--out", str(run)]) == 0
    return run


@pytest.mark.parametrize("merged", [False, True], ids=["adapter", "merged"])
def test_an_exported_agent_loads_in_a_fresh_process_with_transformers_and_peft(trained, tmp_path, merged):
    out = tmp_path / "agent"
    assert main(["export", "--run", str(trained), "--out", str(out)] + (["--merge"] if merged else [])) == 0
    card = (out / "README.md").read_text()
    score = json.loads((trained / "epochs.jsonl").read_text().splitlines()[0])["extra"]["eval/domain"]
    assert "preset tiny" in card and "α, band | 0.5" in card and f"domain {score:.3f}" in card
    assert "arxiv.org/abs/2512.19682" in card
    if not merged:  # the base built here: named by the absolute path of OUT/base, loadable from anywhere
        assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == \
            str((out / "base").resolve())
    proc = subprocess.run([sys.executable, "-c", LOAD, str(out), "merged" if merged else "adapter"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ANSWER" in proc.stdout
    assert not list(tmp_path.glob(".*.partial"))
    if not merged:  # round 4, failure 15: the standard idiom, from another working directory
        auto = subprocess.run([sys.executable, "-c", "import sys; from peft import AutoPeftModelForCausalLM; "
                               "AutoPeftModelForCausalLM.from_pretrained(sys.argv[1]); print('LOADED')", str(out)],
                              capture_output=True, text=True, timeout=300, cwd="/")
        assert "LOADED" in auto.stdout, auto.stderr[-2000:]


def test_export_and_generate_refuse_a_state_that_is_not_a_whole_number_of_epochs(trained, tmp_path, capsys):
    """Round 4, failure 15: ``"last_complete_epoch": 2.9`` exported epoch 2 silently; now one line, nothing
    written."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    state = json.loads((run / "state.json").read_text())
    for bad in (2.9, "1", True):
        (run / "state.json").write_text(json.dumps({**state, "last_complete_epoch": bad}))
        assert main(["export", "--run", str(run), "--out", str(tmp_path / "agent")]) == 1
        assert "not a whole number" in capsys.readouterr().err
        assert not (tmp_path / "agent").exists()


def test_a_garbage_adapter_file_is_one_line_for_export_and_generate(trained, tmp_path, capsys):
    """Round 3's L1, still open: garbage in ``adapter_model.safetensors`` gave a SafetensorError traceback."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    (run / "adapters" / "epoch_001" / "agent" / "adapter_model.safetensors").write_bytes(b"\x00garbage" * 10)
    assert main(["generate", "--run", str(run), "Task: 2 to 9"]) == 1
    assert "cannot be read" in capsys.readouterr().err
    assert main(["export", "--run", str(run), "--out", str(tmp_path / "agent")]) == 1
    assert "cannot be read" in capsys.readouterr().err and not (tmp_path / "agent").exists()


def test_generate_answers_with_the_domains_prompt_and_refuses_what_is_not_a_task(trained, capsys):
    assert main(["generate", "--run", str(trained), "Task: 2 to 9"]) == 0  # a held-out item may be asked
    printed = capsys.readouterr().out
    assert "Count from 2 to 9." in printed and "expected: 3 4 5 6 7 8 9" in printed
    assert main(["generate", "--run", str(trained), "--epoch", "0", "1 to 6"]) == 0  # "Task:" may be left out
    assert main(["generate", "--run", str(trained), "7 * 8"]) == 1
    assert "is not a count task" in capsys.readouterr().err


def test_generate_shortens_a_long_task_in_its_error_and_reads_a_task_from_a_file(trained, tmp_path, capsys):
    """Round 5, P10: a 120,007-character task was echoed whole in the one-line refusal (120,136 characters), and a
    task longer than a command line takes could not be given at all. The refusal names the task's start and length;
    ``--prompt-file`` reads the task from a file (the same answer as the argument)."""
    long = "Task: " + "9" * 120_001
    assert main(["generate", "--run", str(trained), long]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # (the loading bar aside)
    assert len(lines) == 1 and len(lines[0]) < 300 and "120,007 characters" in lines[0], lines
    path = tmp_path / "task.txt"
    path.write_text("Task: 2 to 9\n")
    assert main(["generate", "--run", str(trained), "--prompt-file", str(path)]) == 0
    from_file = capsys.readouterr().out
    assert main(["generate", "--run", str(trained), "Task: 2 to 9"]) == 0
    assert capsys.readouterr().out == from_file and "expected: 3 4 5 6 7 8 9" in from_file
    path.write_text(long)
    assert main(["generate", "--run", str(trained), "--prompt-file", str(path)]) == 1
    assert "120,007 characters" in capsys.readouterr().err
    for args in ([], ["Task: 2 to 9", "--prompt-file", str(path)]):  # neither, or both: a usage error
        with pytest.raises(SystemExit) as refused:
            main(["generate", "--run", str(trained), *args])
        assert refused.value.code == 2 and "--prompt-file" in capsys.readouterr().err
    assert main(["generate", "--run", str(trained), "--prompt-file", "/dev/zero"]) == 1
    assert "not a regular file" in capsys.readouterr().err


def test_export_refuses_a_folder_in_use_and_the_untrained_agent(trained, tmp_path, capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("mine")
    assert main(["export", "--run", str(trained), "--out", str(tmp_path / "used")]) == 1
    assert (tmp_path / "used" / "x").read_text() == "mine"
    assert "not an empty folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # epoch 0 is the untrained agent: nothing to export
        main(["export", "--run", str(trained), "--epoch", "0", "--out", str(tmp_path / "zero")])
    assert not (tmp_path / "zero").exists()


class HubStandIn:
    """A local stand-in for ``huggingface_hub.HfApi`` (this project's machines cannot reach the hub): it records
    the calls and copies the folder it is given, as the hub would store it; ``fail`` makes the upload fail as an
    unreachable hub does."""

    def __init__(self, store, fail=False):
        self.store, self.fail, self.calls = store, fail, []

    def create_repo(self, repo_id, private=False, exist_ok=False):
        self.calls.append(("create_repo", repo_id, private, exist_ok))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, repo_id, folder_path, commit_message=""):
        import shutil

        self.calls.append(("upload_folder", repo_id))
        if self.fail:
            raise ConnectionError("Failed to resolve 'huggingface.co'")
        shutil.copytree(folder_path, self.store / repo_id)


def test_push_to_hub_publishes_the_exported_folder(trained, tmp_path, monkeypatch, capsys):
    from genenv_lab.coevolution import export

    hub = HubStandIn(tmp_path / "hub")
    monkeypatch.setattr("huggingface_hub.HfApi", lambda: hub)
    out = tmp_path / "agent"
    assert main(["export", "--run", str(trained), "--out", str(out), "--push-to-hub", "you/genenv-count-agent",
                 "--private"]) == 0
    assert hub.calls == [("create_repo", "you/genenv-count-agent", True, True),
                         ("upload_folder", "you/genenv-count-agent")]
    published = hub.store / "you" / "genenv-count-agent"
    assert sorted(p.name for p in published.iterdir()) == sorted(p.name for p in out.iterdir())
    assert "pushed to https://huggingface.co/you/genenv-count-agent" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match="could not push .* ConnectionError: Failed to resolve.*folder is kept"):
        export.push_to_hub(out, "you/again", api=HubStandIn(tmp_path / "hub2", fail=True))
    assert (out / "README.md").is_file()


def test_a_hub_that_never_answers_is_one_line_not_a_hang(trained, tmp_path):
    """Round 4, failure 15: with an endpoint that accepts and never answers, ``--push-to-hub`` hung past 180 s. The
    real ``HfApi`` against a silent local socket now fails in one line after the answer limit; the folder stays."""
    import socket

    from huggingface_hub import HfApi

    from genenv_lab.coevolution import export

    out = tmp_path / "agent"
    assert main(["export", "--run", str(trained), "--out", str(out)]) == 0
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never reads or answers
        api = HfApi(endpoint=f"http://127.0.0.1:{silent.getsockname()[1]}", token="hf_not_a_real_token")
        with pytest.raises(RuntimeError, match="did not answer create_repo within 2 s.*folder is kept"):
            export.push_to_hub(out, "you/agent", api=api, answer_s=2)
    assert (out / "README.md").is_file()


def test_an_upload_that_stalls_after_the_repo_is_created_is_one_line_not_a_hang(trained, tmp_path):
    """Round 4, failure 15 (the rest): only ``create_repo`` had a limit, so a hub that answered it and then went
    silent hung the upload for ever (round 5: one that trickles a byte a second never stalls, so the upload as a
    whole is bounded by the folder's size at the slowest rate waited for). The real ``HfApi`` against a local server
    that creates the repo and never answers anything after fails in one line after the stall limit; the folder
    stays, the session's timeout is put back."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from huggingface_hub import HfApi, get_session

    from genenv_lab.coevolution import export

    class CreatesThenFallsSilent(BaseHTTPRequestHandler):
        trickle = False

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path != "/api/repos/create":
                if not self.trickle:
                    time.sleep(60)  # the upload's first request: never answered within the test
                    return
                self.send_response(200)  # round 5: an answer that trickles, never stalls (a byte every 0.2 s,
                self.send_header("content-type", "application/json")  # well inside the 1 s stall limit)
                self.send_header("content-length", "100000")
                self.end_headers()
                try:
                    for _ in range(300):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.2)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
                    pass
                return
            body = json.dumps({"url": f"http://127.0.0.1:{self.server.server_address[1]}/you/agent"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_POST

        def log_message(self, *args):
            pass

    out = tmp_path / "agent"
    assert main(["export", "--run", str(trained), "--out", str(out)]) == 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), CreatesThenFallsSilent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    before = get_session().timeout
    try:
        api = HfApi(endpoint=f"http://127.0.0.1:{server.server_address[1]}", token="hf_not_a_real_token")
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=r"could not push .* (Read)?Timeout.*folder is kept"):
            export.push_to_hub(out, "you/agent", api=api, answer_s=1)
        assert time.monotonic() - start < 30
        CreatesThenFallsSilent.trickle = True
        export.HUB_MIN_RATE, rate = 10 * 2**20, export.HUB_MIN_RATE  # the test's folder in well under a second
        try:
            start = time.monotonic()
            with pytest.raises(RuntimeError, match=r"did not answer the upload at \d+ kB/s or faster within"):
                export.push_to_hub(out, "you/agent", api=api, answer_s=1)
            assert time.monotonic() - start < 10
        finally:
            export.HUB_MIN_RATE = rate
    finally:
        server.shutdown()
        server.server_close()
    assert get_session().timeout == before and (out / "README.md").is_file()


@pytest.mark.parametrize("repo", ["no-owner", "a/b/c", "you/bad name", "_x/y", "you/x.."])
def test_a_bad_hub_id_is_refused_before_any_model_loads(trained, tmp_path, repo, capsys):
    assert main(["export", "--run", str(trained), "--out", str(tmp_path / "o"), "--push-to-hub", repo]) == 1
    assert not (tmp_path / "o").exists() and "expected a hub model id OWNER/NAME" in capsys.readouterr().err
