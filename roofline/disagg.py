"""Moved to roofline.serving.disagg; kept so existing imports keep working."""

from roofline.serving.disagg import Disaggregation, Serving, disaggregate

__all__ = ["Disaggregation", "Serving", "disaggregate"]
