"""How long one kernel takes: roofline, GEMM, GEMV, attention, collectives and host costs.

The roofline itself (`roofline`), GEMMs with their tile rules,
waves and dequantisation (`gemm`), llama.cpp's mat-vec ALU floor (`gemv`), fused attention and
split-KV (`attention`), collectives and the link and curve each takes (`collectives`), and the
engine's host cost with the provenance of the expected figures (`host`). Pure functions, SI
units, numpy broadcasting; each array function's one-point float twin stands beside it.
roofline/step/optime.py dispatches an op to them."""
