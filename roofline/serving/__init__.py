"""Serving under traffic: workloads with arrivals, a continuous-batching scheduler, percentiles and
goodput, disaggregated pools, and deployment sizing with cost. See docs/METRICS.md."""
