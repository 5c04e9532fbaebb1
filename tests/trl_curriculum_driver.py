"""A TRL user's GRPO script with the curriculum (as docs/trl.md's), run by tests/test_trl_curriculum.py in a child
process that may be killed (SIGKILL) at a chosen point, then resumed.

    python tests/trl_curriculum_driver.py OUT [--resume] [--kill stage:E|commit:E|step:N|finish:E] [--epochs N]
        [--run NAME] [--unsloth] [--reward by-place]
    accelerate launch --num_processes 2 tests/trl_curriculum_driver.py OUT --reward by-place

``stage:E``: right after epoch E is staged, before the trainer's checkpoint; ``commit:E``: after the checkpoint of
epoch E, before its commit; ``step:N``: after optimiser step N; ``finish:E``: inside the loop's ``finish_epoch`` of
epoch E (the RWR update), after the trainer's step checkpoint at the end of its pass (``save_steps`` 2 divides the
pass). ``--run``: the run folder's name under OUT (default ``run``; the trainer's ``output_dir`` is OUT/trainer).
``--reward by-place``: the user's own reward function, which gives a rollout its reward by its place in its GRPO group
(the first k(task) of a task's G rollouts succeed), so that p̂ is the same whatever the rollouts' text: what makes a
launch on N processes comparable, task by task, with a one-process run. The trainer's generation batch is 8 rollouts
whatever the number of processes (each process takes 8 / N of it).
The trainer is TRL's, unmodified; the kill points are set by patching the curriculum's own staging functions or by
a second callback.
"""

from __future__ import annotations

import argparse
import os
import signal


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--kill", default="")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--run", default="run")
    parser.add_argument("--unsloth", action="store_true", help="import Unsloth first, as its users do")
    parser.add_argument("--reward", choices=("verifier", "by-place"), default="verifier")
    opts = parser.parse_args()
    if opts.unsloth:
        import unsloth  # noqa: F401 - before transformers and TRL, which it patches

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from genenv_lab import GenEnvCurriculum
    from genenv_lab.trl import driver
    from genenv_lab.rundir import staging
    from genenv_lab.trl import tiny_model

    where, _, at = opts.kill.partition(":")
    if where == "stage":
        real_stage = staging.stage

        def stage(run_dir, result, *args, **kwargs):
            real_stage(run_dir, result, *args, **kwargs)
            if result.record.epoch == int(at):
                _die()

        staging.stage = stage
    elif where == "commit":
        real_commit = staging.commit_staged

        def commit(writer):
            if writer.last_epoch + 1 == int(at):
                _die()
            real_commit(writer)

        staging.commit_staged = commit
    elif where == "finish":
        real_finish = driver.finish_epoch

        def finish(plan, *args, **kwargs):
            if plan.state.epoch + 1 == int(at):
                _die()
            return real_finish(plan, *args, **kwargs)

        driver.finish_epoch = finish

    class KillAtStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if where == "step" and state.global_step == int(at):
                _die()

    model_dir = tiny_model("arith")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    args = GRPOConfig(output_dir=os.path.join(opts.out, "trainer"), num_generations=4,
                      per_device_train_batch_size=8 // processes,
                      max_completion_length=12, num_train_epochs=opts.epochs, learning_rate=1e-3, logging_steps=1,
                      save_strategy="steps", save_steps=2, report_to="none", disable_tqdm=True, use_cpu=True)
    curriculum = GenEnvCurriculum(model, tokenizer, args, domain="arith", run_dir=os.path.join(opts.out, opts.run),
                                  config="tiny", resume=opts.resume)
    funcs = (by_place,) if opts.reward == "by-place" else ()
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                          reward_funcs=curriculum.reward_funcs(*funcs), train_dataset=curriculum.dataset,
                          callbacks=[curriculum, KillAtStep()])
    trainer.train(resume_from_checkpoint=curriculum.resume_from)


def by_place(prompts=None, completions=None, task_id=None, **_):
    """1.0 for the first k of a task's 4 rollouts (k from 0 to 4 by a hash of its id), 0.0 for the rest."""
    import zlib

    return [float(i % 4 < zlib.crc32(t.encode()) % 5) for i, t in enumerate(task_id)]


if __name__ == "__main__":
    main()
