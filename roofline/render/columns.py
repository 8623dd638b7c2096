"""Column-wise rows (sweep): chunks of numpy columns to CSV, JSONL or Parquet, streaming.

A sweep arrives as chunks of columns (numpy arrays, or one scalar shared by the chunk).

- CSV is built in numpy (textcols.py): each column becomes a matrix of bytes at once and a chunk's
  rows are joined by dropping padding, one `write` per chunk. Per-point floats are written to 7
  significant digits, exactly as `'%.7g' % x` (ample for a planner, and what makes CSV fast);
  values shared by a chunk (weight and KV bytes, the ids), integers, booleans (True/False) and
  labels as emit() writes them; NaN/inf as an empty cell.
- JSONL stays exact (shortest round-trip repr, NaN/inf as null): each column is turned to text
  once and rows are joined by C loops (str.__mod__ over zip), equal to emit()'s row by row.
- Parquet (the optional `parquet` extra, pyarrow) holds the float64 values themselves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

import numpy as np

from roofline.render import textcols


def _csv_str(text: str) -> str:
    """csv.QUOTE_MINIMAL: quote a field holding a delimiter, quote or line break."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _scalar_text(v: Any, jsonl: bool) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return ("true" if v else "false") if jsonl else str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "null" if jsonl else ""
    if v is None:
        return "null" if jsonl else ""
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v)) if jsonl else _csv_str(str(v))


def _column_text(v: Any, jsonl: bool) -> str | list[str]:
    """A column as text: one string for a scalar, else a list with one string per point."""
    if np.ndim(v) == 0:
        return _scalar_text(v, jsonl)
    a = np.asarray(v)
    if a.dtype == bool:
        yes, no = ("true", "false") if jsonl else ("True", "False")
        return np.where(a, yes, no).tolist()
    if a.dtype.kind in "iu":
        return list(map(int.__repr__, a.tolist()))
    if a.dtype.kind == "f":
        out = list(map(float.__repr__, a.astype(float).tolist()))
        for i in np.flatnonzero(~np.isfinite(a)).tolist():
            out[i] = "null" if jsonl else ""
        return out
    values, where = np.unique(a, return_inverse=True)  # a few distinct labels per column
    texts = np.array([_scalar_text(x, jsonl) for x in values.tolist()], dtype=object)
    return texts[where.ravel()].tolist()


def _csv_bytes(v: Any) -> np.ndarray:
    """A CSV column as bytes: a 1-D array for a value shared by the chunk, else a matrix with
    one NUL-padded row per point (see textcols)."""
    if np.ndim(v) == 0:
        return np.frombuffer(_scalar_text(v, False).encode(), dtype=np.uint8)
    a = np.asarray(v).ravel()
    if a.dtype.kind == "f":
        return textcols.squeeze(textcols.g7(a))
    if a.dtype.kind in "iu" and textcols.ints_ok(a):
        return textcols.ints(a)
    if a.dtype == bool:
        return textcols.texts(["False", "True"])[a.astype(np.intp)]
    if a.dtype.kind in "iu":  # beyond int64's comfortable range: Python's ints
        return textcols.texts(list(map(int.__repr__, a.tolist())))
    values, codes = _labels(a)
    return textcols.texts([_scalar_text(x, False) for x in values])[codes]


def _labels(a: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct values of a label column (a few: 'memory', 'compute') and each point's index
    into them: one vectorized comparison per distinct value, no sort."""
    codes = np.zeros(a.size, dtype=np.intp)
    values: list[Any] = []
    rest = np.arange(a.size)
    while rest.size and len(values) < 64:
        v = a[rest[0]]
        same = a[rest] == v
        codes[rest[same]] = len(values)
        values.append(v.item() if isinstance(v, np.generic) else v)
        rest = rest[~same]
    if rest.size:  # many distinct labels: sort them instead
        uniq, where = np.unique(a, return_inverse=True)
        return uniq.tolist(), where.ravel()
    return values, codes


def _write_csv(chunks: Iterable[Mapping[str, Any]], names: Sequence[str], out: IO[str]) -> int:
    out.write(",".join(_csv_str(n) for n in names) + "\n")
    rows = 0
    for chunk in chunks:
        fields = [_csv_bytes(chunk[name]) for name in names]
        n = next((f.shape[0] for f in fields if f.ndim == 2), 1)
        if n == 0:
            continue
        _write_bytes(out, textcols.join_rows(fields, b",", n))
        rows += n
    return rows


def _write_bytes(out: IO[str], text: bytes) -> None:
    """ASCII bytes to a text stream: straight to its binary buffer when it has one (a file,
    stdout: no decode to str and encode back), else decoded."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text.decode())
        return
    out.flush()  # the text layer's pending header first
    buffer.write(text)


def _write_jsonl(chunks: Iterable[Mapping[str, Any]], names: Sequence[str], out: IO[str]) -> int:
    rows = 0
    keys = [json.dumps(str(name)) + ": " for name in names]
    for chunk in chunks:
        texts = [_column_text(chunk[name], True) for name in names]
        varying = [t for t in texts if isinstance(t, list)]
        n = len(varying[0]) if varying else 1
        if n == 0:
            continue
        cells = [t.replace("%", "%%") if isinstance(t, str) else "%s" for t in texts]
        template = (
            "{"
            + ", ".join(k.replace("%", "%%") + c for k, c in zip(keys, cells, strict=True))
            + "}"
        )
        lines = (
            map(template.__mod__, zip(*varying, strict=True)) if varying else [template % ()] * n
        )
        out.write("\n".join(lines) + "\n")
        rows += n
    return rows


def write_columns(
    chunks: Iterable[Mapping[str, Any]], names: Sequence[str], fmt: str, out: IO[str]
) -> int:
    """Write chunks of columns as CSV (with a header; per-point floats to 7 significant digits)
    or JSONL (exact); returns the rows written."""
    if fmt == "jsonl":
        return _write_jsonl(chunks, names, out)
    return _write_csv(chunks, names, out)


PARQUET_MISSING = "--format parquet needs pyarrow: pip install 'roofline[parquet]'"


def parquet_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def write_parquet(chunks: Iterable[Mapping[str, Any]], names: Sequence[str], path: str) -> int:
    """Write chunks of columns to one Parquet file (a row group per chunk; NaN as null), for
    pandas, polars or DuckDB. Needs the optional `parquet` extra (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    rows = 0
    try:
        for chunk in chunks:
            n = next((np.size(v) for v in chunk.values() if np.ndim(v)), 1)
            arrays = []
            for name in names:
                v = chunk[name]
                if np.ndim(v) == 0:
                    v = v.item() if isinstance(v, np.generic) else v
                    arrays.append(pa.repeat(pa.scalar(v), n))
                else:
                    a = np.asarray(v)
                    arrays.append(pa.array(a, from_pandas=a.dtype.kind == "f"))
            table = pa.Table.from_arrays(arrays, names=list(names))
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            else:
                table = table.cast(writer.schema)
            writer.write_table(table)
            rows += n
    finally:
        if writer is not None:
            writer.close()
    return rows
