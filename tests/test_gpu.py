"""GPU tier: the hf engine on CUDA with the tiny model (skips itself without a GPU)."""

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_tiny_run_on_gpu(tiny_cfg, tmp_path):
    from genenv_lab.domains import get_domain
    from genenv_lab.backends.factory import make_backend
    from genenv_lab.coevolution.session import run

    backend = make_backend(tiny_cfg, get_domain("arith"))
    assert next(backend.model.parameters()).is_cuda
    records = list(run(tiny_cfg.replace(loop={"epochs": 2}), tmp_path / "r", backend=backend, progress=False))
    assert [r.epoch for r in records] == [1, 2]

