"""The loop with the scripted fake backend: bookkeeping, curriculum, run directory, resume."""

import json
import shutil

import pandas as pd
import pytest

from genenv_lab.core import curriculum as cur
from genenv_lab.domains import get_domain
from genenv_lab.coevolution.session import run
from genenv_lab.rundir.layout import RunDirError
from genenv_lab.rundir.read import read_epochs, read_state, read_table


REQUIRED_KEYS = {"epoch", "n_generated", "n_valid", "valid_frac", "p_hat_mean", "in_band_frac", "env_reward_mean",
                 "frac_zero_std", "agent_reward_mean", "wall_s"}


@pytest.fixture
def cfg(tiny_cfg):
    return tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4})


def test_epoch_bookkeeping(cfg, tmp_path, scripted_backend):
    backend = scripted_backend(num_generations=4)
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    assert [r.epoch for r in records] == [1, 2, 3]
    on_disk = read_epochs(tmp_path / "r")
    assert len(on_disk) == 3 and REQUIRED_KEYS <= set(on_disk[0])
    tasks = read_table(tmp_path / "r", "tasks")
    attempts = read_table(tmp_path / "r", "attempts")
    per_epoch = cfg.env.seeds_per_epoch * cfg.env.n_variations
    assert len(tasks) == 3 * per_epoch
    assert tasks["task_id"].is_unique
    rejected = tasks[~tasks["valid"]]
    assert len(rejected) > 0 and (rejected["reject_reason"] != "").all()
    assert sum(sum(r["reject_reasons"].values()) for r in on_disk) == len(rejected)
    for rec in on_disk:
        ep = tasks[tasks["epoch"] == rec["epoch"]]
        assert rec["n_generated"] == len(ep) and rec["n_valid"] == int(ep["valid"].sum())
    # p̂ of every valid task equals its attempts' success rate; G attempts each; advantages centred
    for row in tasks[tasks["valid"]].itertuples():
        att = attempts[(attempts["task_id"] == row.task_id) & (attempts["epoch"] == row.epoch)]
        assert len(att) == 4
        assert row.p_hat == pytest.approx(att["success"].mean())
        assert row.env_reward == pytest.approx(cur.env_reward(row.p_hat, 0.5, 2.0))
        assert att["advantage"].sum() == pytest.approx(0.0, abs=1e-6)
    # only in-band tasks are weighted, weights have mean 1 within each epoch
    assert (tasks.loc[~tasks["in_band"], "weight"] == 0).all()
    for _, ep in tasks[tasks["in_band"]].groupby("epoch"):
        assert ep["weight"].mean() == pytest.approx(1.0)
    assert backend.calls == {"generate": 3, "grpo": 3, "rwr": len(backend.rwr_batches)}
    assert read_state(tmp_path / "r")["status"] == "finished"


def test_env_update_sees_only_in_band_canonical_texts(cfg, tmp_path, scripted_backend):
    backend = scripted_backend(num_generations=4)
    list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    tasks = read_table(tmp_path / "r", "tasks")
    in_band_texts = set(tasks.loc[tasks["in_band"], "text"])
    examples = [ex for batch in backend.rwr_batches for ex in batch]
    assert examples and all(ex.messages[-1] == {"role": "assistant", "content": "Expression:"} for ex in examples)
    assert {"Expression:" + ex.target for ex in examples} <= in_band_texts  # target continues the prefill


def test_random_env_never_updates_the_simulator(cfg, tmp_path, scripted_backend):
    backend = scripted_backend(num_generations=4)
    records = list(run(cfg.replace(loop={"variant": "random_env"}), tmp_path / "r", backend=backend, progress=False))
    assert backend.calls["rwr"] == 0
    assert all(r.env_version == 0 and r.extra["rwr/steps"] == 0 for r in records)


def test_context_carries_lineage_statistics(cfg, tmp_path, scripted_backend):
    list(run(cfg.replace(loop={"epochs": 3}), tmp_path / "r", backend=scripted_backend(), progress=False))
    tasks = read_table(tmp_path / "r", "tasks")
    later = [json.loads(c)[1]["content"] for c in tasks.loc[tasks["epoch"] == 3, "context"]]  # the user turn
    assert any("recent attempts" in c for c in later)


def test_resume_after_interruption_and_torn_writes(cfg, tmp_path, scripted_backend):
    out = tmp_path / "r"
    gen = run(cfg, out, backend=scripted_backend(), progress=False)
    next(gen)
    next(gen)
    gen.close()  # stopped after epoch 2, as a killed process would be
    # simulate a crash in the middle of committing epoch 3: rows written, record half-written, marker not moved
    tasks = read_table(out, "tasks")
    torn = tasks[tasks["epoch"] == 2].copy()
    torn["epoch"] = 3
    torn["features"] = torn["features"].map(json.dumps)
    torn.to_parquet(out / "tasks" / "epoch_003.parquet", index=False)
    with open(out / "epochs.jsonl", "a") as fh:
        fh.write('{"epoch": 3, "n_gener')
    partial = out / "adapters" / "epoch_003.partial"  # an adapter save cut short by the kill
    partial.mkdir(parents=True)
    (partial / "agent.safetensors").write_bytes(b"torn")
    records = list(run(cfg, out, resume=True, backend=scripted_backend(), progress=False))
    assert [r.epoch for r in records] == [3]
    assert not partial.exists()
    assert [r["epoch"] for r in read_epochs(out)] == [1, 2, 3]
    tasks = read_table(out, "tasks")
    assert tasks["task_id"].is_unique and sorted(tasks["epoch"].unique()) == [1, 2, 3]


def test_a_commit_writes_only_its_own_epochs_rows(tmp_path, monkeypatch):
    """Fifty epochs committed, then a fifty-first: the commit writes that epoch's rows alone (no earlier table file
    is read or rewritten), and the tables read back whole."""
    from genenv_lab.config import preset
    from genenv_lab.rundir.write import RunWriter
    from genenv_lab.rundir.layout import table_files
    from genenv_lab.core.types import Attempt, EpochRecord, GeneratedTask

    cfg = preset("tiny").replace(loop={"epochs": 51})
    writer = RunWriter(tmp_path / "long", cfg)

    def commit(epoch: int) -> None:
        tasks = [GeneratedTask(task_id=f"e{epoch:03d}-{i}", epoch=epoch, env_version=0, parent_id="s", root_id="s",
                               context="[]", raw="x", valid=True) for i in range(3)]
        attempts = [Attempt(task_id=t.task_id, epoch=epoch, source="generated", prompt="p", completion="c",
                            reward=1.0, success=True, advantage=0.0) for t in tasks]
        record = EpochRecord(epoch=epoch, n_generated=3, n_valid=3, valid_frac=1.0, p_hat_mean=0.5,
                             in_band_frac=1.0, env_reward_mean=1.0, frac_zero_std=0.0, agent_reward_mean=1.0,
                             wall_s=0.0)
        writer.commit_epoch(record, tasks, attempts)

    for epoch in range(1, 51):
        commit(epoch)
    written, read = [], []
    real_write, real_read = pd.DataFrame.to_parquet, pd.read_parquet
    monkeypatch.setattr(pd.DataFrame, "to_parquet", lambda self, *a, **k: (written.append(len(self)),
                                                                           real_write(self, *a, **k))[1])
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: (read.append(a), real_read(*a, **k))[1])
    commit(51)
    writer.release()
    assert written == [3, 3] and read == []  # tasks and attempts of epoch 51, nothing else
    monkeypatch.undo()
    assert [e for e, _ in table_files(tmp_path / "long", "tasks")] == list(range(1, 52))
    tasks = read_table(tmp_path / "long", "tasks")
    assert len(tasks) == 153 and tasks["task_id"].is_unique and list(tasks["epoch"].unique()) == list(range(1, 52))


def test_a_run_in_the_single_file_layout_is_refused_then_resumes_once_upgraded(cfg, tmp_path, scripted_backend):
    """A run written before the per-epoch layout (one tasks.parquet / attempts.parquet) is refused in one line that
    names the upgrade; after ``genenv-lab upgrade`` it reads as it was and resumes into per-epoch files."""
    from genenv_lab.rundir.upgrade import upgrade_run

    out = tmp_path / "old"
    list(run(cfg.replace(loop={"epochs": 2}), out, backend=scripted_backend(), progress=False))
    for name in ("tasks", "attempts"):
        frames = [pd.read_parquet(p) for p in sorted((out / name).glob("epoch_*.parquet"))]
        pd.concat(frames, ignore_index=True).to_parquet(out / f"{name}.parquet", index=False)
        shutil.rmtree(out / name)
    with pytest.raises(RunDirError, match="genenv-lab upgrade"):
        read_table(out, "tasks")
    upgrade_run(out)
    before = read_table(out, "tasks")
    assert sorted(before["epoch"].unique()) == [1, 2]
    records = list(run(cfg.replace(loop={"epochs": 3}), out, resume=True, backend=scripted_backend(),
                       progress=False))
    assert [r.epoch for r in records] == [3]
    tasks = read_table(out, "tasks")
    assert sorted(tasks["epoch"].unique()) == [1, 2, 3] and tasks["task_id"].is_unique


def test_refuses_non_empty_dir_and_bad_resume(cfg, tmp_path, scripted_backend):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("hi")
    with pytest.raises(RunDirError, match="not empty"):
        next(run(cfg, tmp_path / "x", backend=scripted_backend(), progress=False))
    with pytest.raises(RunDirError, match="not a run directory"):
        next(run(cfg, tmp_path / "x", resume=True, backend=scripted_backend(), progress=False))
    list(run(cfg.replace(loop={"epochs": 1}), tmp_path / "y", backend=scripted_backend(), progress=False))
    with pytest.raises(RunDirError, match="another configuration"):
        next(run(cfg.replace(agent={"lr": 0.5}), tmp_path / "y", resume=True, backend=scripted_backend(),
                 progress=False))


def test_static_generates_a_fixed_set_once_and_samples_the_budget(cfg, tmp_path, scripted_backend):
    backend = scripted_backend(num_generations=4)
    cfg = cfg.replace(loop={"variant": "static"}, env={"static_variations": 3})
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    n_seeds = len(get_domain("arith").seed_tasks())
    assert records[0].n_generated == n_seeds * 3
    assert [r.n_generated for r in records[1:]] == [0, 0]
    assert all(r.extra["fresh/tasks"] == cfg.budget for r in records)
    assert backend.calls["rwr"] == 0 and backend.calls["generate"] == 1
    attempts = read_table(tmp_path / "r", "attempts")
    assert set(attempts["source"]) >= {"fixed", "seed"}


def test_filter_only_is_blind_frozen_and_keeps_only_last_epoch(cfg, tmp_path, scripted_backend):
    backend = scripted_backend(num_generations=4)
    cfg = cfg.replace(loop={"variant": "filter_only"}, env={"seeds_per_epoch": 5, "n_variations": 3})
    records = list(run(cfg, tmp_path / "r", backend=backend, progress=False))
    assert backend.calls["rwr"] == 0
    assert all(r.n_generated == 15 for r in records)
    tasks = read_table(tmp_path / "r", "tasks")
    assert all("No attempts" in json.loads(c)[1]["content"] for c in tasks["context"])
    last = tasks[(tasks["epoch"] == 3) & tasks["valid"]]
    k = int(0.1 * len(last))
    expected = len(last) - 2 * k if k else 0  # the release's [k:-k] keeps nothing when k == 0
    assert records[-1].pool_size == expected


def test_offline_teacher_writes_the_fixed_set(cfg, scripted_backend):
    from genenv_lab.domains import get_domain
    from genenv_lab.core.types import LoopState
    from genenv_lab.coevolution.loop import run_epoch

    cfg = cfg.replace(loop={"variant": "offline_teacher", "epochs": 2},
                      env={"teacher_model": "some/teacher", "teacher_data_multiplier": 1.8})
    student, teacher = scripted_backend(), scripted_backend()
    domain = get_domain("arith")
    state, result = run_epoch(LoopState(), student, domain, domain.seed_tasks(), cfg, generator=teacher)
    assert teacher.calls["generate"] == 1 and student.calls["generate"] == 0
    per_seed = -(-int(1.8 * 2 * cfg.budget * 10) // (10 * len(domain.seed_tasks())))
    assert result.record.n_generated == per_seed * len(domain.seed_tasks())
    assert result.record.extra["fresh/tasks"] == cfg.budget


def test_reference_tasks_measure_the_agent_each_epoch_and_survive_resume(cfg, tmp_path, scripted_backend):
    cfg = cfg.replace(loop={"reference_tasks": 5})
    out = tmp_path / "r"
    gen = run(cfg, out, backend=scripted_backend(), progress=False)
    first = next(gen)
    gen.close()
    ref = read_table(out, "reference_tasks")
    assert len(ref) == 5 and ref["task_id"].str.startswith("ref-").all()
    assert 0.0 <= first.extra["reference/p_hat"] <= 1.0
    rest = list(run(cfg, out, resume=True, backend=scripted_backend(skill=5), progress=False))
    assert [r.epoch for r in rest] == [2, 3]
    assert all("reference/p_hat" in r.extra for r in rest)
    assert read_table(out, "reference_tasks")["task_id"].tolist() == ref["task_id"].tolist()


def test_an_interrupt_during_setup_marks_the_run_interrupted(cfg, tmp_path, monkeypatch, scripted_backend):
    """Ctrl-C or the lab's Stop while the model loads: the run says "interrupted" (not a dead "running"), and a
    resumed run keeps its simulator version."""
    import genenv_lab.coevolution.session as session

    out = tmp_path / "r"
    list(run(cfg.replace(loop={"epochs": 2}), out, backend=scripted_backend(), progress=False))
    version = read_state(out)["env_version"]

    def interrupted_load(cfg, domain):
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "make_backend", interrupted_load)
    with pytest.raises(KeyboardInterrupt):
        list(run(cfg.replace(loop={"epochs": 3}), out, resume=True, progress=False))
    state = read_state(out)
    assert state["status"] == "interrupted" and state["last_complete_epoch"] == 2
    assert state["env_version"] == version


def test_hostile_outputs_are_counted_never_fatal(cfg, tmp_path, monkeypatch, scripted_backend):
    """A parser that raises on a generation makes it a counted rejection; a scorer that raises on a completion
    scores it 0 and counts it (``extra.agent/score_errors``); the run completes."""
    from genenv_lab.domains.arith import ArithDomain

    parse, score = ArithDomain.parse, ArithDomain.score

    def hostile_parse(self, text):
        if "+ 1 + 1" in text:  # the scripted simulator's deepest variations
            raise RecursionError("maximum recursion depth exceeded")
        return parse(self, text)

    def hostile_score(self, spec, completion):
        if completion.strip() != spec.answer:  # every wrong answer blows up the scorer
            raise OverflowError("int too large to convert to float")
        return score(self, spec, completion)

    monkeypatch.setattr(ArithDomain, "parse", hostile_parse)
    monkeypatch.setattr(ArithDomain, "score", hostile_score)
    records = list(run(cfg.replace(loop={"epochs": 2}), tmp_path / "r", backend=scripted_backend(num_generations=4),
                       progress=False))
    assert [r.epoch for r in records] == [1, 2]
    assert any(r.reject_reasons.get("unparseable generation (RecursionError)") for r in records)
    attempts = read_table(tmp_path / "r", "attempts")
    wrong = int((attempts["reward"] == 0).sum())
    assert wrong > 0 and sum(r.extra["agent/score_errors"] for r in records) == wrong
    assert read_state(tmp_path / "r")["status"] == "finished"


def test_safe_score_rejects_rewards_outside_the_unit_interval(monkeypatch):
    from genenv_lab.domains.arith import ArithDomain

    d = ArithDomain()
    spec = d.parse("Expression: 2 + 3\nQuestion: q").spec
    assert d.safe_score(spec, " 5") == (1.0, "") and d.safe_score(spec, " 6") == (0.0, "")
    monkeypatch.setattr(ArithDomain, "score", lambda self, spec, completion: float("nan"))
    assert d.safe_score(spec, " 5") == (0.0, "reward outside [0, 1]")
    monkeypatch.setattr(ArithDomain, "parse", lambda self, text: 1 / 0)
    assert d.safe_parse("Expression: 1").reason == "unparseable generation (ZeroDivisionError)"


def test_one_writer_per_run_directory(cfg, tmp_path, scripted_backend):
    """While a run is being written, a --resume of it is refused and changes nothing; once the writer has let go
    (finished, stopped or killed), resuming works."""
    out = tmp_path / "r"
    gen = run(cfg.replace(loop={"epochs": 3}), out, backend=scripted_backend(), progress=False)
    next(gen)  # epoch 1 committed; the writer is alive and holds the lock
    before = (out / "epochs.jsonl").read_text()
    with pytest.raises(RunDirError, match="being written by another process"):
        next(run(cfg.replace(loop={"epochs": 3}), out, resume=True, backend=scripted_backend(), progress=False))
    assert (out / "epochs.jsonl").read_text() == before
    gen.close()  # the writer stops
    records = list(run(cfg.replace(loop={"epochs": 3}), out, resume=True, backend=scripted_backend(),
                       progress=False))
    assert [r.epoch for r in records] == [2, 3]
    assert [r["epoch"] for r in read_epochs(out)] == [1, 2, 3]


@pytest.fixture
def exploding(scripted_backend):
    class _Exploding(scripted_backend):
        """Fails in the agent update of its ``at``-th call."""

        def __init__(self, at: int, **kw):
            super().__init__(**kw)
            self.at = at

        def train_agent(self, trainer, prompts, reward_fn):
            if self.calls["grpo"] + 1 >= self.at:
                raise RuntimeError("device lost")
            return super().train_agent(trainer, prompts, reward_fn)

    return _Exploding


def test_a_failed_run_says_failed_and_a_failed_resume_leaves_the_state_as_it_was(cfg, tmp_path, scripted_backend,
                                                                                 exploding):
    out = tmp_path / "r"
    with pytest.raises(RuntimeError, match="device lost"):
        list(run(cfg.replace(loop={"epochs": 3}), out, backend=exploding(at=2), progress=False))
    assert read_state(out)["status"] == "failed" and read_state(out)["last_complete_epoch"] == 1
    assert "failed: RuntimeError: device lost" in (out / "events.log").read_text()

    done = tmp_path / "done"
    list(run(cfg.replace(loop={"epochs": 1}), done, backend=scripted_backend(), progress=False))
    before = (done / "state.json").read_bytes()
    with pytest.raises(RuntimeError, match="device lost"):
        list(run(cfg.replace(loop={"epochs": 2}), done, resume=True, backend=exploding(at=1), progress=False))
    assert (done / "state.json").read_bytes() == before and read_state(done)["status"] == "finished"


# ------------------------------------------------------------------------------- what training consumed (cumulative/*)

def _cumulative_from_attempts(attempts: pd.DataFrame) -> dict[int, tuple[int, int, int]]:
    """Per epoch, from the attempts table alone: cumulative rows (GRPO rollouts), distinct non-seed task ids and
    distinct non-seed prompts."""
    out, rows, ids, prompts = {}, 0, set(), set()
    for epoch, part in attempts.groupby("epoch"):
        rows += len(part)
        trained = part[part["source"] != "seed"]
        ids |= set(trained["task_id"])
        prompts |= set(trained["prompt"])
        out[int(epoch)] = (rows, len(ids), len(prompts))
    return out


@pytest.mark.parametrize("variant", ["genenv", "static", "filter_only"])
def test_records_count_training_rollouts_tokens_and_distinct_tasks(cfg, tmp_path, variant, scripted_backend):
    """cumulative/* counts the GRPO pass's completions and nothing the run only measures with: the counterfactual
    reference rollouts and the held-out evaluation (both on here) are left out."""
    from genenv_lab.compare import tasks_consumed_by_epoch

    cfg = cfg.replace(loop={"variant": variant, "epochs": 3, "reference_tasks": 5},
                      eval={"every": 1, "benchmark": "domain", "limit": 4})
    records = list(run(cfg, tmp_path / "r", backend=scripted_backend(num_generations=4), progress=False))
    on_disk = read_epochs(tmp_path / "r")
    attempts = read_table(tmp_path / "r", "attempts")
    expected = _cumulative_from_attempts(attempts)
    consumed = tasks_consumed_by_epoch(attempts)
    for rec, disk in zip(records, on_disk):
        e = rec.extra
        assert "reference/p_hat" in e and "eval/domain" in e  # measured, and not counted below
        rows, ids, prompts = expected[rec.epoch]
        assert e["cumulative/agent_rollouts"] == rows == rec.n_agent_prompts * 4 + (
            on_disk[rec.epoch - 2]["extra"]["cumulative/agent_rollouts"] if rec.epoch > 1 else 0)
        assert e["cumulative/agent_tokens"] == rows  # the scripted agent answers one word ("token") per completion
        assert e["cumulative/distinct_tasks"] == ids == consumed[rec.epoch]  # the comparison's tasks_consumed
        assert e["cumulative/distinct_questions"] == prompts <= ids
        assert {k: disk["extra"][k] for k in e if k.startswith("cumulative/")} == {
            k: v for k, v in e.items() if k.startswith("cumulative/")}
        assert not any(k.startswith("screen/") for k in e)  # only online_filter screens


def test_tokens_a_backend_cannot_count_are_null_and_rollouts_survive_resume(cfg, tmp_path, scripted_backend):
    class NoTokenCount(scripted_backend):
        completion_tokens = None  # a backend that cannot count tokens

    out = tmp_path / "r"
    gen = run(cfg, out, backend=NoTokenCount(num_generations=4), progress=False)
    first = next(gen)
    gen.close()
    assert first.extra["cumulative/agent_tokens"] is None
    assert read_epochs(out)[0]["extra"]["cumulative/agent_tokens"] is None  # null in epochs.jsonl
    rest = list(run(cfg, out, resume=True, backend=scripted_backend(num_generations=4), progress=False))
    assert all(r.extra["cumulative/agent_tokens"] is None for r in rest)  # unknown once: unknown after
    rows = _cumulative_from_attempts(read_table(out, "attempts"))
    assert [r.extra["cumulative/agent_rollouts"] for r in rest] == [rows[2][0], rows[3][0]]
    assert [r.extra["cumulative/distinct_tasks"] for r in rest] == [rows[2][1], rows[3][1]]


def test_a_run_written_before_the_cumulative_keys_resumes_counting_from_its_attempts(cfg, tmp_path, scripted_backend):
    out = tmp_path / "r"
    gen = run(cfg, out, backend=scripted_backend(num_generations=4), progress=False)
    next(gen)
    gen.close()
    lines = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    for rec in lines:  # as an older version wrote it
        rec["extra"] = {k: v for k, v in rec["extra"].items() if not k.startswith("cumulative/")}
    (out / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rest = list(run(cfg, out, resume=True, backend=scripted_backend(num_generations=4), progress=False))
    rows = _cumulative_from_attempts(read_table(out, "attempts"))
    assert [r.extra["cumulative/agent_rollouts"] for r in rest] == [rows[2][0], rows[3][0]]
    assert all(r.extra["cumulative/agent_tokens"] is None for r in rest)  # never counted for epoch 1


def test_read_table_joins_epochs_whose_column_types_differ(tmp_path):
    """One arrow conversion for all epoch files, with null columns promoted; epochs whose types disagree (an int
    column once written as text) are joined the way pandas joins them, not refused."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    pd.DataFrame({"task_id": ["a"], "p_hat": [0.5], "reject_reason": [None]}).to_parquet(folder / "epoch_001.parquet")
    pd.DataFrame({"task_id": ["b"], "p_hat": [1.0], "reject_reason": ["x"]}).to_parquet(folder / "epoch_002.parquet")
    frame = read_table(tmp_path, "tasks")
    assert list(frame["task_id"]) == ["a", "b"] and frame["p_hat"].tolist() == [0.5, 1.0]
    assert frame["reject_reason"].isna().tolist() == [True, False]
    pd.DataFrame({"task_id": ["c"], "p_hat": ["high"], "reject_reason": [None]}).to_parquet(
        folder / "epoch_003.parquet")
    assert read_table(tmp_path, "tasks")["p_hat"].tolist() == [0.5, 1.0, "high"]


def test_a_full_disk_during_the_adapter_save_is_one_line_and_loses_no_epoch(cfg, tmp_path, scripted_backend):
    """Round 4, L1: a disk that filled while safetensors wrote the adapters gave a ``SafetensorError`` traceback.
    It is one line naming the committed epochs and how to continue; the cut-short save is removed, the epochs before
    it stay, and ``--resume`` finishes the run."""
    from safetensors import SafetensorError

    class DiskFillsAtEpoch2(scripted_backend):
        saves = 0

        def save_adapters(self, directory):
            self.saves += 1
            if self.saves == 2:
                (directory / "agent").mkdir()
                raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
            super().save_adapters(directory)

    out = tmp_path / "r"
    with pytest.raises(RuntimeError, match=r"saving the adapters of epoch 2 failed \(SafetensorError: .*No space "
                                           r"left.*epochs up to 1 are committed.*--resume") as info:
        list(run(cfg.replace(loop={"epochs": 3}), out, backend=DiskFillsAtEpoch2(), progress=False))
    assert "\n" not in str(info.value)
    assert [r["epoch"] for r in read_epochs(out)] == [1] and read_state(out)["last_complete_epoch"] == 1
    assert sorted(p.name for p in (out / "adapters").iterdir()) == ["epoch_001"]
    records = list(run(cfg.replace(loop={"epochs": 3}), out, backend=scripted_backend(), resume=True, progress=False))
    assert [r.epoch for r in records] == [2, 3] and [r["epoch"] for r in read_epochs(out)] == [1, 2, 3]


def test_an_epoch_leaves_its_inputs_unchanged_and_its_rows_are_frozen(cfg, scripted_backend):
    """No step changes what it was given: the state, the seeds and the generated tasks are the same after an epoch
    (the epoch's generations are scored by copying), and the rows that cross the steps are frozen records."""
    import copy
    import dataclasses

    from genenv_lab.coevolution.loop import run_epoch
    from genenv_lab.coevolution.state import LoopState
    from genenv_lab.core.types import BatchTask, GeneratedTask, Parent

    domain = get_domain(cfg.loop.domain)
    seeds = domain.seed_tasks()
    backend = scripted_backend(num_generations=cfg.agent.num_generations)
    state, _ = run_epoch(LoopState(), backend, domain, seeds, cfg)  # a pool and statistics to read
    before_state, before_seeds = copy.deepcopy(state), copy.deepcopy(seeds)
    new_state, result = run_epoch(state, backend, domain, seeds, cfg)
    assert state == before_state and seeds == before_seeds
    assert new_state is not state and new_state.epoch == state.epoch + 1
    assert any(t.weight > 0 for t in result.tasks)  # scored copies carry what the epoch measured
    for cls in (GeneratedTask, BatchTask, Parent):
        assert cls.__dataclass_params__.frozen, cls
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tasks[0].p_hat = 0.5


def test_a_fresh_start_on_a_full_disk_is_marked_failed_in_place(tmp_path, monkeypatch):
    """Round 5: a fresh start on a full disk left ``state.json`` saying ``running`` (its events.log could not be
    written, and neither could the temporary file of the failed state). The ending is written over the state file
    in place, which needs no new block."""
    import errno

    import genenv_lab.rundir.write as runlog
    from genenv_lab.config import preset

    real = runlog.atomic_write_json

    def full_disk_after_the_first_state(path, obj):
        if path.name == "state.json" and obj.get("status") != "running":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, obj)

    def no_room(self, line):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runlog, "atomic_write_json", full_disk_after_the_first_state)
    monkeypatch.setattr(runlog.RunWriter, "event", no_room)
    with pytest.raises(OSError, match="No space left"):
        runlog.RunWriter(tmp_path / "r", preset("tiny"))
    assert read_state(tmp_path / "r")["status"] == "failed"


def test_band_parents_are_the_recent_tasks_at_the_frontier_and_the_default_keeps_half_seeds(cfg):
    """``env.parents``: ``band`` varies only pool tasks measured in the last ``stats_window`` epochs, in band (or
    nearest α when none is), and chooses as ``seeds_and_pool`` until one is measured; ``seeds_and_pool`` gives every
    other slot to a seed and draws exactly what it drew before the option existed (the same random stream)."""
    import random

    from genenv_lab.coevolution.simulator import choose_parents
    from genenv_lab.core.types import LoopState, PoolTask

    domain = get_domain(cfg.loop.domain)
    seeds = domain.seed_tasks()
    spec = seeds[0].spec
    pool = [PoolTask(f"t{i}", seeds[0].seed_id, epoch, spec, p) for i, (epoch, p) in
            enumerate([(1, 0.5), (4, 1.0), (4, 0.75), (5, 0.25), (5, 0.5), (5, float("nan"))])]
    state = LoopState(epoch=5, pool=pool)
    band = cfg.replace(env={"parents": "band", "seeds_per_epoch": 8, "stats_window": 2})
    assert {p.parent_id for p in choose_parents(state, seeds, band, random.Random(0))} == {"t4"}  # t0 is too old
    state.pool = pool[1:4]  # none in band: the nearest α (0.75 and 0.25)
    assert {p.parent_id for p in choose_parents(state, seeds, band, random.Random(0))} == {"t2", "t3"}
    state.pool = pool[5:]  # nothing measured yet: as seeds_and_pool
    assert choose_parents(state, seeds, band, random.Random(0)) == choose_parents(
        state, seeds, band.replace(env={"parents": "seeds_and_pool"}), random.Random(0))
    state.pool = pool
    default = cfg.replace(env={"seeds_per_epoch": 8})
    chosen = choose_parents(state, seeds, default, random.Random(0))
    rng = random.Random(0)
    before = [rng.choice(pool).task_id if k % 2 else rng.choice(seeds).seed_id for k in range(8)]
    assert [p.parent_id for p in chosen] == before


def test_the_seed_probe_reads_the_agents_greedy_answers_to_the_seeds_every_epoch(cfg, tmp_path, scripted_backend):
    """``loop.seed_probe``: after each epoch, whatever ``eval.every`` says, the agent's greedy answers to the run's
    seeds. The scripted agent solves a task greedily once its skill (one more per GRPO call) passes the task's
    operand count, so the probe must count exactly the seeds at or above that skill as missed."""
    from genenv_lab.core.metrics import PROBE_REFERENCE_GREEDY, PROBE_SEEDS_GREEDY, PROBE_SEEDS_MISSED

    seeds = get_domain(cfg.loop.domain).seed_tasks()
    operands = [s.spec.features["n_operands"] for s in seeds]
    backend = scripted_backend(num_generations=4)
    probed = cfg.replace(loop={"seed_probe": True, "epochs": 3}, eval={"every": 0})
    records = []
    for record in run(probed, tmp_path / "p", backend=backend, progress=False):
        missed = sum(n >= backend.skill for n in operands)
        assert record[PROBE_SEEDS_MISSED] == missed
        assert record[PROBE_SEEDS_GREEDY] == pytest.approx(1 - missed / len(seeds))
        records.append(record)
    assert [r[PROBE_SEEDS_GREEDY] for r in records] == sorted(r[PROBE_SEEDS_GREEDY] for r in records)
    assert [r[PROBE_SEEDS_GREEDY] for r in read_epochs(tmp_path / "p")] == [r[PROBE_SEEDS_GREEDY] for r in records]
    assert all(r.get(PROBE_REFERENCE_GREEDY) is None for r in records)  # no counterfactual set in this run
    plain = list(run(cfg.replace(loop={"epochs": 1}), tmp_path / "q", backend=scripted_backend(), progress=False))
    assert plain[0].get(PROBE_SEEDS_GREEDY) is None


def test_the_seed_probe_reads_the_counterfactual_set_greedily_too(cfg, tmp_path, scripted_backend):
    """With ``loop.reference_tasks``, the probe also answers the untrained simulator's tasks greedily: the scripted
    agent's greedy answer is right exactly below its skill, so the reading is the share of those tasks whose operand
    count is below it."""
    from genenv_lab.core.metrics import PROBE_REFERENCE_GREEDY
    from genenv_lab.rundir.read import read_table

    backend = scripted_backend(num_generations=4)
    probed = cfg.replace(loop={"seed_probe": True, "epochs": 2, "reference_tasks": 6}, eval={"every": 0})
    records = []
    for record in run(probed, tmp_path / "r", backend=backend, progress=False):
        records.append((record, backend.skill))
    reference = read_table(tmp_path / "r", "reference_tasks")
    operands = [f["n_operands"] for f in reference.loc[reference["valid"].astype(bool), "features"].map(
        lambda f: f if isinstance(f, dict) else json.loads(f))]
    assert operands
    for record, skill in records:
        assert record[PROBE_REFERENCE_GREEDY] == pytest.approx(sum(n < skill for n in operands) / len(operands))


def _probe_file(path, texts):
    path.write_text("".join(json.dumps({"id": f"probe-{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    return str(path)


def test_a_probe_file_is_read_greedily_beside_the_seeds(cfg, tmp_path, scripted_backend):
    """``loop.probe``: more training items, answered greedily after every epoch with the seeds. The scripted agent is
    right exactly below its skill, so the reading counts the items whose operand count reaches it."""
    from genenv_lab.core.metrics import PROBE_SEEDS_GREEDY, PROBE_SET_GREEDY, PROBE_SET_MISSED

    texts = ["Expression: 3 + 4 + 5\nQuestion: What is 3 + 4 + 5?", "Expression: 2 * 9\nQuestion: What is 2 * 9?",
             "Expression: 1 + 2 + 3 + 4\nQuestion: What is 1 + 2 + 3 + 4?"]
    probe = get_domain(cfg.loop.domain).probe_tasks(_probe_file(tmp_path / "probe.jsonl", texts))
    operands = [t.spec.features["n_operands"] for t in probe]
    assert sorted(operands) == [2, 3, 4]
    backend = scripted_backend(num_generations=4)
    probed = cfg.replace(loop={"seed_probe": True, "probe": str(tmp_path / "probe.jsonl"), "epochs": 3},
                         eval={"every": 0})
    for record in run(probed, tmp_path / "p", backend=backend, progress=False):
        missed = sum(n >= backend.skill for n in operands)
        assert record[PROBE_SET_MISSED] == missed and record[PROBE_SET_GREEDY] == pytest.approx(1 - missed / 3)
        assert record[PROBE_SEEDS_GREEDY] is not None
    assert read_epochs(tmp_path / "p")[-1][PROBE_SET_MISSED] == missed


def test_a_probe_file_that_poses_a_held_out_item_is_refused_before_any_model_loads(cfg, tmp_path):
    """A choice is made on the probe, so it may not hold a held-out item: the run stops before its folder is written,
    with the file's line, and a probe given without the seed probe is a config error saying what to do."""
    from genenv_lab.config import ConfigError

    held = get_domain(cfg.loop.domain).heldout_tasks()[0].spec.text
    bad = _probe_file(tmp_path / "bad.jsonl", ["Expression: 3 + 4\nQuestion: What is 3 + 4?", held])
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: .*held-out"):
        list(run(cfg.replace(loop={"seed_probe": True, "probe": bad}), tmp_path / "b", progress=False))
    assert not (tmp_path / "b").exists()
    with pytest.raises(ConfigError, match="seed_probe=true"):
        cfg.replace(loop={"probe": bad})


def test_the_counting_probe_is_short_counts_off_the_held_out_set():
    """``data/count_probe.jsonl``, the counting presets' probe: counts from 1–4 to at most 12, none of them a held-out
    item (the domain's own check refuses one), every start and the short end covered."""
    probe = get_domain("count").probe_tasks("count_probe.jsonl")
    held = {t.spec.text for t in get_domain("count").heldout_tasks()}
    assert len(probe) >= 20 and not held & {t.spec.text for t in probe}
    assert {t.spec.features["start"] for t in probe} == {1, 2, 3, 4}
    assert min(t.spec.features["level"] for t in probe) == 3 and max(t.spec.features["level"] for t in probe) == 12


def test_each_epoch_records_how_varied_its_tasks_are(cfg, tmp_path, scripted_backend):
    """``diversity/entropy``: the entropy of the questions the epoch's valid tasks pose, as the tasks table holds
    them; a comparison row carries it under the same key."""
    from genenv_lab.compare.table import table_rows
    from genenv_lab.core.diversity import entropy_bits
    from genenv_lab.core.metrics import DIVERSITY_ENTROPY

    records = list(run(cfg, tmp_path / "d", backend=scripted_backend(num_generations=4), progress=False))
    tasks = read_table(tmp_path / "d", "tasks")
    for record in records:
        questions = tasks.loc[(tasks["epoch"] == record.epoch) & tasks["valid"].astype(bool), "question"]
        assert len(questions) > 1 and record[DIVERSITY_ENTROPY] == pytest.approx(entropy_bits(questions))
    rows = table_rows("tiny:genenv", "genenv", 0, records, {})
    assert [r[DIVERSITY_ENTROPY] for r in rows] == [r[DIVERSITY_ENTROPY] for r in records]
