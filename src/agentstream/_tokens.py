"""`approximate_tokens`: a tokenizer-free token estimate, shared by the token limiters of
processors (the answer) and memory (the loaded history)."""

from __future__ import annotations

import re

__all__ = ["approximate_tokens"]

_TOKEN = re.compile(r"\w{1,4}|[^\w\s]", re.UNICODE)


def approximate_tokens(text: str) -> int:
    """A tokenizer-free estimate: runs of up to four word characters and each punctuation mark count
    one token (close to BPE tokenizers on English prose). Pass a real tokenizer's count as
    ``counter`` for exact limits, e.g. ``lambda s: len(tiktoken.get_encoding("o200k_base").encode(s))``.
    """
    return len(_TOKEN.findall(text))
