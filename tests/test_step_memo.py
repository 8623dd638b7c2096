"""A StepModel built again for a configuration it was built for takes the tables the first
build made (sim.runmemo.kept_tables) instead of evaluating the roofline core on its grids
again: the same as a build from scratch, attribute for attribute; another configuration is not
taken for it, and what a model changes on itself afterwards (make_replica's dense_cache) stays
its own."""

from __future__ import annotations

import numpy as np

from roofline.serving.sim import runmemo
from roofline.serving.sim.runmemo import TABLES_KEPT
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment


def _equal(a: StepModel, b: StepModel) -> None:
    assert a.__dict__.keys() == b.__dict__.keys()
    for name, x in a.__dict__.items():
        y = b.__dict__[name]
        if name == "groups":
            assert len(x) == len(y)
            for (kx, cx), (ky, cy) in zip(x, y, strict=True):
                assert np.array_equal(kx, ky) and cx == cy
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), name
        else:
            assert x == y, name


def test_a_configuration_built_again_is_the_build_from_scratch(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    runmemo._TABLES.clear()
    first = StepModel(m, hw, Deployment(), 64, 4096, False, engine="vllm")
    again = StepModel(m, hw, Deployment(), 64, 4096, False, engine="vllm")  # an equal layout
    assert again.base_s is first.base_s  # taken from what the first build kept
    runmemo._TABLES.clear()
    scratch = StepModel(m, hw, Deployment(), 64, 4096, False, engine="vllm")
    assert scratch.base_s is not first.base_s  # computed again
    _equal(again, scratch)
    again.dense_cache = 4096  # set on one model (make_replica does): not on the kept tables
    assert StepModel(m, hw, Deployment(), 64, 4096, False, engine="vllm").dense_cache is None


def test_another_configuration_is_never_taken_for_one_kept(cat):
    m, hw = cat.model("llama-3.1-8b"), cat.accelerator("h100")
    runmemo._TABLES.clear()
    expected = StepModel(m, hw, Deployment(), 64, 4096, False)
    ideal = StepModel(m, hw, Deployment(), 64, 4096, True)
    assert (ideal.base_s < expected.base_s).all()  # η = 1 and no overhead: faster
    assert len(StepModel(m, hw, Deployment(), 32, 4096, False).base_s) == 32
    tp2 = StepModel(m, hw, Deployment().with_layout(tp=2), 64, 4096, False)
    assert (tp2.base_s < expected.base_s).all()  # half the weights read per GPU
    for batch in range(1, 2 * TABLES_KEPT):  # at most TABLES_KEPT configurations kept
        StepModel(m, hw, Deployment(), batch, 1024, False)
        assert len(runmemo._TABLES) <= TABLES_KEPT
