"""The HTML report's answer and charts for `roofline report` (a spec's candidates compared)."""

from __future__ import annotations

CONTENT: dict = {}
