"""Serving under traffic: workloads, arrivals, percentiles, goodput, sizing, cost, the day.

Workloads with arrivals, the simulator (sim/: a continuous-batching scheduler), percentiles and
goodput, disaggregated pools, and deployment sizing with cost. See docs/METRICS.md."""
