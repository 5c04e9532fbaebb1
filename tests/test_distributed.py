"""Data parallelism: the loop under ``torchrun`` with two CPU processes (gloo), launched as a user launches it, and
the pieces of genenv_lab.backends.distributed on their own.

The two-process tier (tiny preset, ~15 s a run): the run directory is complete and written once, both processes
hold the same adapters after every epoch, every process's rows are in the tables exactly once, p̂ is what the
attempts say, a killed process is recovered by ``--resume``, and one process under torchrun is the plain run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genenv_lab.core import curriculum as cur
from genenv_lab.config import preset
from genenv_lab.backends.distributed import DataParallelBackend, Processes, adapter_hash
from genenv_lab.rundir.read import read_epochs, read_state, read_table

EPOCHS = 3
RUN = ["-m", "genenv_lab.cli", "run", "--preset", "tiny", "--loop.epochs", str(EPOCHS)]


def torchrun(n: int) -> list[str]:
    """``torchrun --nproc_per_node n`` of this interpreter's environment (its module when the script is absent)."""
    script = Path(sys.executable).parent / "torchrun"
    return ([str(script)] if script.is_file() else [sys.executable, "-m", "torch.distributed.run"]) + [
        "--nproc_per_node", str(n)]


def launch(prefix: list[str], out: Path, *extra: str, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(prefix + RUN + ["--out", str(out), *extra], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def numbers(run_dir: Path) -> list[dict]:
    """epochs.jsonl without timings (what must match between two runs of the same seed)."""
    out = []
    for record in read_epochs(run_dir):
        r = {k: v for k, v in record.to_dict().items() if k not in ("wall_s", "phase_s")}
        r["extra"] = {k: v for k, v in r["extra"].items() if not k.endswith("_s")}
        out.append(r)
    return out


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("dp") / "run"
    return out, launch(torchrun(2), out)


# ------------------------------------------------------------------------------------------ two processes

def test_two_processes_write_one_complete_run_directory(two_process_run):
    out, proc = two_process_run
    state = read_state(out)
    assert state["status"] == "finished" and state["last_complete_epoch"] == EPOCHS and state["world_size"] == 2
    assert [r["epoch"] for r in read_epochs(out)] == list(range(1, EPOCHS + 1))
    for epoch in range(1, EPOCHS + 1):
        for adapter in ("agent", "env"):
            assert (out / "adapters" / f"epoch_{epoch:03d}" / adapter / "adapter_model.safetensors").is_file()
    events = (out / "events.log").read_text().splitlines()
    assert sum("started" in line for line in events) == 1 and "2 processes" in events[0]
    assert sum("epoch 1 complete" in line for line in events) == 1  # written by the main process only
    assert proc.stdout.count("GenEnv co-evolution") == 1  # the main process speaks


def test_both_processes_hold_the_same_adapters_after_every_epoch(two_process_run):
    out, _ = two_process_run
    for r in read_epochs(out):
        hashes = r["extra"]["processes/adapter_sha256"]
        assert len(hashes) == 2 and len(set(hashes)) == 1 and len(hashes[0]) == 64, (r["epoch"], hashes)
    assert len({r["extra"]["processes/adapter_sha256"][0] for r in read_epochs(out)}) == EPOCHS  # they do train


def test_every_process_rows_are_in_the_tables_exactly_once(two_process_run):
    out, _ = two_process_run
    g = preset("tiny").agent.num_generations
    tasks, attempts = read_table(out, "tasks"), read_table(out, "attempts")
    for r in read_epochs(out):
        t = tasks[tasks["epoch"] == r["epoch"]]
        a = attempts[attempts["epoch"] == r["epoch"]]
        assert len(t) == r["n_generated"] and t["task_id"].is_unique
        sizes = a.groupby("task_id").size()
        # each prompt's G completions came from one process, and each process's completions were logged once
        assert len(sizes) == r["n_agent_prompts"] and set(sizes) == {g}, sizes.to_dict()


def test_p_hat_is_recomputed_from_the_gathered_attempts(two_process_run):
    out, _ = two_process_run
    threshold = preset("tiny").agent.success_threshold
    tasks, attempts = read_table(out, "tasks"), read_table(out, "attempts")
    measured = tasks[tasks["p_hat"].notna()]
    assert len(measured) > 0
    for _, t in measured.iterrows():
        rewards = attempts[(attempts["epoch"] == t["epoch"]) & (attempts["task_id"] == t["task_id"])]["reward"]
        assert t["p_hat"] == pytest.approx(cur.success_rate(list(rewards), threshold)), t["task_id"]
    for r in read_epochs(out):
        epoch = measured[measured["epoch"] == r["epoch"]]
        if len(epoch):
            assert r["p_hat_mean"] == pytest.approx(epoch["p_hat"].mean())


def test_a_killed_process_is_recovered_by_resume(two_process_run, tmp_path):
    import psutil  # accelerate requires it: always installed with genenv_lab
    reference, _ = two_process_run
    out = tmp_path / "run"
    job = subprocess.Popen(torchrun(2) + RUN + ["--out", str(out)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline:
            try:
                if read_state(out)["last_complete_epoch"] >= 1:
                    break
            except Exception:  # noqa: BLE001 - not written yet, or mid-replace
                pass
            time.sleep(0.02)
        else:
            pytest.fail("epoch 1 was never committed")
        workers = psutil.Process(job.pid).children(recursive=True)
        victim = next(w for w in workers if w.environ().get("RANK") == "1")
        victim.kill()  # SIGKILL of the second process: torchrun then ends the job
        assert job.wait(timeout=120) != 0
    finally:
        if job.poll() is None:
            job.kill()
    state = read_state(out)
    assert state["status"] in ("failed", "interrupted") and 1 <= state["last_complete_epoch"] < EPOCHS
    launch(torchrun(2), out, "--resume")
    assert read_state(out)["status"] == "finished"
    assert numbers(out) == numbers(reference)  # as if it had never been killed
    assert read_table(out, "attempts").shape == read_table(reference, "attempts").shape


def accelerate_launch(n: int) -> list[str]:
    """``accelerate launch`` with ``n`` processes (every setting given, so that it asks and warns nothing)."""
    script = Path(sys.executable).parent / "accelerate"
    return ([str(script)] if script.is_file() else [sys.executable, "-m", "accelerate.commands.accelerate_cli"]) + [
        "launch", "--num_processes", str(n), "--num_machines", "1", "--mixed_precision", "no",
        "--dynamo_backend", "no"] + (["--multi_gpu"] if n > 1 else [])


def test_one_process_under_torchrun_or_accelerate_is_the_plain_run(tmp_path):
    launch([sys.executable], tmp_path / "plain")
    for name, prefix in (("torchrun", torchrun(1)), ("accelerate", accelerate_launch(1))):
        launch(prefix, tmp_path / name)
        assert numbers(tmp_path / name) == numbers(tmp_path / "plain"), name
        assert read_state(tmp_path / name)["world_size"] == 1


# --------------------------------------------------------------------------------------------- the pieces

def test_one_process_collectives_are_local(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    p = Processes()
    assert (p.world_size, p.rank, p.is_main) == (1, 0, True)
    assert p.shard([1, 2, 3]) == p.gather([1, 2, 3]) == [1, 2, 3]
    assert p.broadcast({"a": 1}) == {"a": 1} and p.mean(0.25) == 0.25 and p.any(False) is False
    assert p.seed(7) == 7


def test_engines_and_batches_that_cannot_split_are_refused(monkeypatch):
    from genenv_lab.backends.factory import check_engine

    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(RuntimeError, match="do not split evenly between 3 processes.*--agent.prompts_per_step"):
        check_engine(preset("tiny"))  # 2 prompts a step
    check_engine(preset("tiny").replace(agent={"prompts_per_step": 3}))
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="engine 'unsloth' runs on one GPU; this job has 2 processes"):
        check_engine(preset("colab-t4"))
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(RuntimeError, match="not a number of processes"):
        check_engine(preset("tiny"))


def test_adapter_hash_sees_every_weight():
    import torch

    class Weights:
        def __init__(self, value):
            self.state = {"agent": {"a.lora_A": torch.zeros(2, 3)}, "env": {"e.lora_A": torch.full((2,), value)}}

        def adapter_state(self, adapter):
            return self.state[adapter]

    same = adapter_hash(Weights(1.0), ("agent", "env"))
    assert same == adapter_hash(Weights(1.0), ("agent", "env"))
    assert same != adapter_hash(Weights(1.0 + 1e-7), ("agent", "env"))
    assert same != adapter_hash(Weights(1.0), ("agent",))


class TwoProcesses:
    """Process 0 of a two-process job whose process 1 is scripted: gather appends its share."""

    world_size, rank, is_main = 2, 0, True

    def __init__(self, theirs):
        self.theirs = theirs

    def shard(self, items):
        return list(items)[: (len(items) + 1) // 2]

    def gather(self, mine):
        return list(mine) + self.theirs(mine)


def test_generation_is_split_and_gathered_in_process_order():
    seen = []

    class Inner:
        def generate(self, adapter, prompts, **kw):
            seen.append(list(prompts))
            return [[f"{adapter}:{p}"] for p in prompts]

    procs = TwoProcesses(lambda mine: [["env:c"]])  # process 1 answered the third prompt
    assert DataParallelBackend(Inner(), procs).generate("env", ["a", "b", "c"], n=1) == [["env:a"], ["env:b"],
                                                                                        ["env:c"]]
    assert seen == [["a", "b"]]


def test_the_reward_log_gets_every_process_completions_once():
    calls = []

    def reward_fn(task_ids, completions):
        calls.append((list(task_ids), list(completions)))
        return [1.0] * len(task_ids)

    class Inner:
        def train_agent(self, trainer, prompts, fn):  # TRL calls the reward function once per generation batch
            fn(["t1", "t1"], ["x", "y"])
            fn(["t2", "t2"], ["z", "w"])
            return f"update by {trainer}"

    procs = TwoProcesses(lambda mine: [(1, "t3", "p"), (1, "t3", "q")])
    wanted = [(["t1", "t1"], ["x", "y"]), (["t2", "t2"], ["z", "w"]), (["t3", "t3"], ["p", "q"])]
    assert DataParallelBackend(Inner(), procs).train_agent("high_entropy", [], reward_fn) == "update by high_entropy"
    assert calls == wanted


def test_the_accelerate_configs_load_with_accelerate():
    from accelerate.commands.config.config_args import load_config_from_file

    root = Path(__file__).resolve().parent.parent / "configs" / "accelerate"
    ddp = load_config_from_file(str(root / "ddp.yaml"))
    zero2 = load_config_from_file(str(root / "deepspeed_zero2.yaml"))
    assert (ddp.distributed_type, zero2.distributed_type) == ("MULTI_GPU", "DEEPSPEED")
    assert zero2.deepspeed_config["zero_stage"] == 2 and ddp.num_processes == zero2.num_processes == 8
    # the example command's preset splits its GRPO steps over the configured processes
    assert preset("a100").agent.prompts_per_step % ddp.num_processes == 0


def test_the_lab_shows_the_number_of_processes(two_process_run, tmp_path):
    from genenv_lab.lab.runs import load_run, summarize
    from genenv_lab.lab.views import run_card, runs_frame

    out, _ = two_process_run
    assert summarize(out).processes == 2 and runs_frame([summarize(out)])["procs"].tolist() == [2]
    assert "2 processes" in run_card(load_run(out))
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for bad in ("two", True, 0, None):  # a hand-edited state.json shows one process, never an error
        state = read_state(copy)
        state["world_size"] = bad
        (copy / "state.json").write_text(json.dumps(state))
        assert summarize(copy).processes == 1 and "1 process" in run_card(load_run(copy))


def test_what_a_multi_process_run_adds_is_documented(two_process_run):
    out, _ = two_process_run
    doc = (Path(__file__).resolve().parent.parent / "docs" / "run_directory.md").read_text()
    assert all(f"`{key}`" in doc for key in read_state(out))
    assert "`extra.processes/adapter_sha256`" in doc


def test_when_the_main_process_cannot_open_the_run_every_process_stops_with_its_reason(two_process_run):
    out, _ = two_process_run
    before = (out / "epochs.jsonl").read_bytes()
    proc = subprocess.run(torchrun(2) + RUN + ["--out", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0 and "is not empty; pass --resume" in proc.stdout, proc.stdout[-2000:]
    assert (out / "epochs.jsonl").read_bytes() == before and read_state(out)["status"] == "finished"


def test_a_two_process_rwr_step_is_the_update_of_the_whole_mini_batch(tmp_path):
    import torch

    driver = str(Path(__file__).resolve().parent / "rwr_step_driver.py")
    sizes = ["5", "3", "1"]  # of 5 examples: 5 and 3 do not split evenly; 1 leaves process 1 without an example
    results = {}
    for label, prefix in (("one", [sys.executable]), ("two", torchrun(2))):
        out = tmp_path / f"{label}.pt"
        proc = subprocess.run(prefix + [driver, str(out), *sizes], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[label] = torch.load(out, weights_only=True)
    for size in map(int, sizes):
        one, two = results["one"][size], results["two"][size]
        assert one["steps"] == two["steps"] == 3
        assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)
        assert two["kl"] == pytest.approx(one["kl"], rel=1e-4)
        moved = 0.0
        for name, weight in one["env"].items():
            # AdamW moves each weight by about lr (1e-2) a step whatever the gradient's size, so an element whose
            # gradient is near zero carries the summation-order noise of the all-reduce into its step: 1 % of lr
            torch.testing.assert_close(two["env"][name], weight, rtol=1e-3, atol=1e-4)
            moved = max(moved, weight.abs().max().item())
        assert moved > 0  # the update did change the adapter (LoRA B starts at zero)


def test_eval_and_compare_refuse_a_multi_process_launch(monkeypatch, capsys, tmp_path):
    from genenv_lab.cli.commands import main

    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["eval", "--benchmark", "bamboogle", "--gold", str(tmp_path / "gold.jsonl")]) == 2
    assert main(["compare", "--out", str(tmp_path / "cmp")]) == 2
    out = capsys.readouterr().out
    assert out.count("runs in one process; launch it without torchrun") == 2
    assert not (tmp_path / "gold.jsonl").exists() and not (tmp_path / "cmp").exists()


def test_accelerate_launch_with_two_processes_is_the_torchrun_job(two_process_run, tmp_path):
    reference, _ = two_process_run
    launch(accelerate_launch(2), tmp_path / "accelerate")
    assert numbers(tmp_path / "accelerate") == numbers(reference)
    assert read_state(tmp_path / "accelerate")["world_size"] == 2


# ------------------------------------------------------------------------------------- the TRL plugin on two

TRL_DRIVER = Path(__file__).resolve().parent / "trl_curriculum_driver.py"


def test_the_trl_curriculum_on_two_processes_is_the_one_process_run(tmp_path):
    """GenEnvCurriculum under ``accelerate launch --num_processes 2`` (issue 68): one run directory written once, the
    simulator's update the same on both processes, and on the same seeds the same tasks, p̂, band and RWR batch as a
    one-process run of the same script (its reward by a rollout's place in its group, so that p̂ does not hang on
    the rollouts' sampled text). The simulator's weights after the update agree to Adam's first steps (±lr an
    element, so float noise in a near-zero gradient may flip one): 5 % of the update's norm."""
    import os

    from safetensors.torch import load_file

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [str(TRL_DRIVER), "--reward", "by-place", "--epochs", "2"]
    for prefix, out in (([sys.executable], tmp_path / "one"), (accelerate_launch(2), tmp_path / "two")):
        proc = subprocess.run(prefix + [args[0], str(out), *args[1:]], capture_output=True, text=True, env=env,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    one, two = tmp_path / "one" / "run", tmp_path / "two" / "run"
    state = read_state(two)
    assert state["status"] == "finished" and state["world_size"] == 2 and state["last_complete_epoch"] == 2
    events = (two / "events.log").read_text().splitlines()
    assert sum("started" in line for line in events) == 1 and sum("epoch 1 complete" in line for line in events) == 1
    for r in read_epochs(two):
        hashes = r["extra"]["processes/adapter_sha256"]
        assert len(hashes) == 2 and len(set(hashes)) == 1, (r["epoch"], hashes)
    columns = ["task_id", "raw", "valid", "p_hat", "env_reward", "in_band", "weight"]
    first = [read_table(run, "tasks").query("epoch == 1")[columns].reset_index(drop=True) for run in (one, two)]
    assert first[0].equals(first[1]) and (first[0]["weight"] > 0).any()  # the same tasks and RWR batch
    attempts = [read_table(run, "attempts").query("epoch == 1").groupby("task_id")["reward"].agg(["size", "sum"])
                for run in (one, two)]
    assert attempts[0].equals(attempts[1])  # every rollout gathered once
    (r1, r2) = (read_epochs(run)[0] for run in (one, two))
    assert r1.p_hat_mean == r2.p_hat_mean and r1.in_band_frac == r2.in_band_frac
    for key in ("rwr/loss", "rwr/kl"):
        assert r2.extra[key] == pytest.approx(r1.extra[key], rel=0.02), key
    weights = [load_file(str(run / "adapters" / "epoch_001" / "env" / "adapter_model.safetensors"))
               for run in (one, two)]
    moved = [k for k in weights[0] if "lora_B" in k]  # B starts at zero: its weights are the update
    gap = sum(float(((weights[0][k] - weights[1][k]) ** 2).sum()) for k in moved) ** 0.5
    norm = sum(float((weights[0][k] ** 2).sum()) for k in moved) ** 0.5
    assert norm > 0 and gap / norm < 0.05


def test_a_launch_resumes_between_two_passes(tmp_path):
    """On several processes the curriculum resumes from a checkpoint between two passes (or at a pass's last step):
    one inside a pass holds some of its epoch's rollouts, and the resumed trainer would serve the rest in an order
    each process reads apart."""
    import json

    from genenv_lab.trl.resume import CHECKPOINT_FILE, inside_a_pass, last_checkpoint

    def checkpoint(step: int, order: list[str], prompts: list[str]) -> None:
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "trainer_state.json").write_text("{}")
        (folder / CHECKPOINT_FILE).write_text(json.dumps({"order": order, "prompts": dict.fromkeys(prompts, "p")}))

    checkpoint(4, [], ["a", "b"])  # between two passes: the next epoch's tasks, none rolled out
    checkpoint(6, ["a"], ["a", "b"])  # inside a pass
    checkpoint(8, ["b", "a"], ["a", "b"])  # a pass's last step: every task rolled out
    checkpoint(10, ["b"], ["a", "b"])
    saved = ({"order": [], "prompts": {"a": 1}}, {"order": ["a"], "prompts": {"a": 1, "b": 1}},
             {"order": ["a"], "prompts": {"a": 1}}, None)
    assert [inside_a_pass(s) for s in saved] == [False, True, False, False]
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
    assert last_checkpoint(tmp_path, whole_passes=True) == str(tmp_path / "checkpoint-8")


def test_a_killed_trl_launch_resumes_with_no_committed_epoch_lost(tmp_path):
    """A SIGKILL of the main process after the checkpoint of epoch 2 and before its commit, under ``accelerate
    launch --num_processes 2``: the launcher stops the other process; the resumed launch commits epoch 2 and
    finishes epoch 3, each epoch once."""
    import os

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "two"
    command = accelerate_launch(2) + [str(TRL_DRIVER), str(out), "--reward", "by-place", "--epochs", "3"]
    killed = subprocess.run(command + ["--kill", "commit:2"], capture_output=True, text=True, env=env, timeout=600)
    assert killed.returncode != 0
    assert [r["epoch"] for r in read_epochs(out / "run")] == [1]
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
    assert [r["epoch"] for r in read_epochs(out / "run")] == [1, 2, 3]
    assert read_state(out / "run")["status"] == "finished"
    for r in read_epochs(out / "run"):
        assert len(set(r["extra"]["processes/adapter_sha256"])) == 1


def test_a_followers_evaluation_folder_is_its_own_and_goes_when_the_run_ends(tmp_path):
    """A process that is not the main one writes its held-out evaluation files into a scratch folder of its own (the
    main process's go into the run); finishing, failing or releasing drops it."""
    from genenv_lab.rundir.write import FollowerWriter

    ends = {"finish": lambda w: w.finish(0), "fail": lambda w: w.fail(RuntimeError("x"), 0),
            "release": lambda w: w.release()}
    for end, call in ends.items():
        writer = FollowerWriter(tmp_path / "run", 0)
        folder = writer.eval_dir
        assert folder.is_dir() and folder != writer.dir and writer.eval_dir == folder
        call(writer)
        assert not folder.exists(), end
        writer.release()  # idempotent
