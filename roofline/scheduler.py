"""Moved to roofline.serving (scheduler and steps); kept so existing imports keep working."""

from roofline.serving.cliff import CliffPoint, simulate
from roofline.serving.scheduler import EngineRules, simulate_requests
from roofline.serving.steps import StepModel, kv_budget_blocks

__all__ = [
    "CliffPoint",
    "EngineRules",
    "StepModel",
    "kv_budget_blocks",
    "simulate",
    "simulate_requests",
]
