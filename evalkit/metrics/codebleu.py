"""CodeBLEU (n-gram, keyword-weighted n-gram, AST and data-flow match) via the ``codebleu`` package.

Two numbers with different meanings:

- ``codebleu``: the score of ONE prediction against its reference(s) (per case). The report's
  "mean CodeBLEU" is the mean of these per-case scores.
- ``corpus_codebleu``: the package's corpus computation over all pairs at once (n-gram counts and
  subtree / data-flow matches are pooled before dividing). It is NOT the mean of per-case scores
  and is reported under its own name.

Only languages with an installed tree-sitter grammar (``evalkit.treesitter.SUPPORTED``) are scored.
The package builds a fresh tree-sitter parser on every call and keeps no module state, so calls
from several threads are safe without a lock (tests/metrics/test_codebleu.py checks this).

Determinism: the package's data-flow extraction orders variable names with ``list(set(names))``,
so ``dataflow_match`` (and CodeBLEU) changed with PYTHONHASHSEED, i.e. from one process to the
next. ``_calc_codebleu`` makes ``set`` in those two package modules keep first-seen order (see
``_InsertionOrderedSet``): one of the orders the package could produce anyway, now always the same.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Sequence
from functools import partial

from evalkit.models import Model
from evalkit.treesitter import SUPPORTED

Tokenizer = Callable[[str], list[str]]

DEFAULT_WEIGHTS: tuple[float, float, float, float] = (0.25, 0.25, 0.25, 0.25)
"""Weights of n-gram, weighted n-gram, syntax and data-flow match (the paper's default)."""


class CodeBleuResult(Model):
    """CodeBLEU and its four components, each between 0 and 1."""

    codebleu: float
    """Weighted sum of the four components; the data-flow term counts as 1 only when no reference
    has any data flow (the package also gave 1 when the flows existed and none matched)."""
    ngram_match: float
    """BLEU over tokens."""
    weighted_ngram_match: float
    """BLEU with language keywords weighted 5x over other tokens."""
    syntax_match: float
    """Share of the reference's AST subtrees found in the prediction."""
    dataflow_match: float
    """Share of the reference's normalised data-flow edges found in the prediction (0 if none)."""


_STRING = (
    r"(?<!\w)[rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?''')"  # triple-quoted / text blocks
    r"|(?<!\w)[rRbBuUfF]{0,2}\"(?:\\.|[^\"\\\n])*\""
    r"|(?<!\w)[rRbBuUfF]{0,2}'(?:\\.|[^'\\\n])*'"
)
_NUMBER = (
    r"0[xX][0-9a-fA-F_]+[lL]?|0[bB][01_]+[lL]?"
    r"|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[fFdDlLjJ]?"
)
_IDENT = r"[^\W\d]\w*"
_OPERATORS = sorted(
    [
        ">>>=", "<<=", ">>=", ">>>", "**=", "//=", "...", "->", "::", "==", "!=", "<=", ">=",
        "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>",
        "**", "//", ":=", "@=",
    ],
    key=len,
    reverse=True,
)
_OPERATOR = "|".join(re.escape(op) for op in _OPERATORS)
_COMMENTS = {
    "java": r"//[^\n]*|/\*[\s\S]*?\*/",
    "python": r"#[^\n]*",
}


def _token_pattern(comment: str | None) -> re.Pattern[str]:
    parts = [_STRING, _NUMBER, _IDENT, _OPERATOR, r"\S"]
    if comment:
        parts.insert(0, f"(?P<comment>{comment})")
    return re.compile("|".join(f"(?:{p})" if not p.startswith("(?P") else p for p in parts))


_PATTERNS: dict[str | None, re.Pattern[str]] = {None: _token_pattern(None)}
_PATTERNS.update({lang: _token_pattern(c) for lang, c in _COMMENTS.items()})


def tokenize_source(code: str, language: str | None = None) -> list[str]:
    """Split raw source into tokens: identifiers, numbers and string literals whole, multi-char
    operators (``==``, ``->``, ``::``, ``+=``, ...) as one token, any other character alone.

    Comments: with a known ``language`` they are dropped, because CodeBLEU's syntax and data-flow
    parts also ignore them and a commented answer should not lose n-gram precision for it.
    Without a language they are kept and split like code (``//`` is floor division in Python and
    ``#`` is no comment in Java, so they cannot be recognised language-blind).
    """
    pattern = _PATTERNS.get(language, _PATTERNS[None])
    return [m.group(0) for m in pattern.finditer(code) if not m.lastgroup]


class _InsertionOrderedSet(dict):  # type: ignore[type-arg]
    """The subset of ``set`` the codebleu data-flow code uses (build, ``add``, ``in``, iterate),
    iterating in first-seen order instead of hash order."""

    def __init__(self, iterable: object = ()) -> None:
        super().__init__()
        for item in iterable:  # type: ignore[attr-defined]
            self[item] = None

    def add(self, item: object) -> None:
        self[item] = None


_patch_lock = threading.Lock()
_patched = False


def _calc_codebleu() -> Callable[..., dict[str, float]]:
    """``codebleu.calc_codebleu`` with its data-flow name order made hash-seed independent."""
    global _patched
    from codebleu import calc_codebleu  # deferred: codebleu and its grammars, only when CodeBLEU is computed

    with _patch_lock:
        if not _patched:
            for name in ("codebleu.parser.DFG", "codebleu.dataflow_match"):
                importlib.import_module(name).set = _InsertionOrderedSet  # type: ignore[attr-defined]
            _patched = True
    return calc_codebleu


def _resolve(tokenizer: Tokenizer | None, language: str) -> Tokenizer | None:
    if tokenizer is tokenize_source:
        return partial(tokenize_source, language=language)
    return tokenizer


def _result(
    scores: dict[str, float],
    references: list[list[str]],
    language: str,
    weights: tuple[float, float, float, float],
) -> CodeBleuResult:
    total = float(scores["codebleu"])
    dataflow = float(scores["dataflow_match_score"])
    if dataflow == 0.0:
        # The package scores ``dataflow or 1``: right when the references have no data flow at
        # all, wrong when they have flows and the prediction matches none (an empty answer got
        # 0.25). Each reference against itself tells the two apart.
        from codebleu.dataflow_match import corpus_dataflow_match  # deferred: codebleu and its grammars, only when CodeBLEU is computed

        flat = [r for refs in references for r in refs]
        if corpus_dataflow_match([[r] for r in flat], flat, language) > 0:
            total -= weights[3]
    return CodeBleuResult(
        codebleu=max(0.0, total),
        ngram_match=float(scores["ngram_match_score"]),
        weighted_ngram_match=float(scores["weighted_ngram_match_score"]),
        syntax_match=float(scores["syntax_match_score"]),
        dataflow_match=dataflow,
    )


def _references(reference: str | Sequence[str]) -> list[str]:
    refs = [reference] if isinstance(reference, str) else list(reference)
    return [r for r in refs if r.strip()]


def codebleu(
    prediction: str,
    reference: str | Sequence[str],
    language: str,
    tokenizer: Tokenizer | None = tokenize_source,
    weights: tuple[float, float, float, float] = DEFAULT_WEIGHTS,
) -> CodeBleuResult | None:
    """Per-case CodeBLEU of one prediction against one reference (or several alternatives).

    ``tokenizer=tokenize_source`` (the default) is applied with comments of ``language`` dropped;
    ``tokenizer=None`` uses the package's default (split on whitespace), which suits
    pre-tokenised text such as CodeXGLUE's. Returns None for an unsupported language or an empty
    reference (nothing to compare with).
    """
    if language not in SUPPORTED:
        return None
    refs = _references(reference)
    if not refs:
        return None
    scores = _calc_codebleu()([refs], [prediction], language, weights, _resolve(tokenizer, language))
    return _result(scores, [refs], language, weights)


def corpus_codebleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    language: str,
    tokenizer: Tokenizer | None = tokenize_source,
    weights: tuple[float, float, float, float] = DEFAULT_WEIGHTS,
) -> CodeBleuResult | None:
    """Corpus CodeBLEU: the package's pooled computation over all (prediction, reference) pairs.

    Differs from the mean of per-case ``codebleu`` scores (counts are pooled before dividing).
    Pairs whose references are all empty are left out; returns None for an unsupported language
    or when no pair is left.
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"corpus_codebleu: {len(predictions)} predictions but {len(references)} references"
        )
    if language not in SUPPORTED:
        return None
    pairs = [(p, _references(r)) for p, r in zip(predictions, references)]
    pairs = [(p, r) for p, r in pairs if r]
    if not pairs:
        return None
    refs = [r for _, r in pairs]
    scores = _calc_codebleu()(refs, [p for p, _ in pairs], language, weights, _resolve(tokenizer, language))
    return _result(scores, refs, language, weights)


def codebleu_gain(output_score: float, legacy_score: float) -> float | None:
    """CodeBLEU points an output gained over the legacy file, both against the expected file:
    ``cb(out) - cb(legacy)``. 0 for returning the legacy file unchanged, negative for moving away from the
    expected file; gold gains the case's headroom ``1 - cb(legacy)``. A plain difference, not divided by
    the headroom: on files whose legacy version already scores 0.97-0.997 (most of Kai's coolstore files)
    the normalised gain saturated at +-1 from a few tokens, and a one-line ``javax.`` -> ``jakarta.`` sed got
    the best non-gold value. It measures closeness to the expected text, not whether the migration was done:
    never a headline (see `migrated`)."""
    return output_score - legacy_score
