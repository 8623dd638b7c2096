"""A replica's ideal step model, built when first read (roofline.serving.serve.Replica.ideal):
the runs of a search that reads only the expected figures (size's SLO searches, a fit point's
expected run) never read it, and building one (StepModel: the decode and prefill tables at
η = 1, plus the speculative round's) is half of make_replica."""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.domain.hardware import Accelerator
from roofline.domain.model import ModelArch
from roofline.serving.sim.drafting import DraftConfig, DraftRound, speculative_steps
from roofline.serving.sim.steps import StepModel
from roofline.step.ops import Deployment


@dataclass(eq=False)
class IdealSteps:
    """Called: StepModel(model, hw, dep, max_seqs, max_len, ideal=True, max_tokens=top,
    engine=engine), wrapped in the speculative round `rnd` of `drafting` when given, built on
    the first call and kept (a Replica's copies share it)."""

    model: ModelArch
    hw: Accelerator
    dep: Deployment
    max_seqs: int
    max_len: int
    top: int
    engine: str | None
    drafting: DraftConfig | None = None
    rnd: DraftRound | None = None
    built: StepModel | None = field(default=None, repr=False)

    def __call__(self) -> StepModel:
        if self.built is None:
            m, hw, dep, eng = self.model, self.hw, self.dep, self.engine
            steps = StepModel(m, hw, dep, self.max_seqs, self.max_len, True, max_tokens=self.top,
                              engine=eng)  # fmt: skip
            if self.drafting is not None and self.rnd is not None:
                steps = speculative_steps(steps, m, hw, dep, self.drafting, self.rnd, True, eng)
            self.built = steps
        return self.built
