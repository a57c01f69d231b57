"""Demo rag system: composes a hint from the incident and the retrieved contexts (no model).

Picks the contexts that share the most words with the incident (dropping the ones sharing none),
and answers with the best one, plus the second when it is close. A real, small program: its
hints are sometimes right, sometimes led astray by an irrelevant context.
"""

from __future__ import annotations

import re

from evalkit.demo_systems.protocol import answer, read_case

STOP = {"the", "a", "an", "in", "of", "to", "with", "is", "are", "and", "or", "on", "for", "use", "line"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z@.]+", text.lower()) if w not in STOP and len(w) > 2}


def compose(question: str, contexts: list[str]) -> str:
    q = words(question)
    ranked = sorted(((len(q & words(c)), -i, c) for i, c in enumerate(contexts)), reverse=True)
    picked = [c for score, _, c in ranked[:2] if score > 0 and score >= ranked[0][0] - 1]
    if not picked:
        return "No hint: none of the retrieved contexts matches the incident."
    return " ".join(picked)


def main() -> None:
    case, _ = read_case()
    inputs = case["inputs"]
    answer({"text": compose(inputs.get("question", ""), list(inputs.get("contexts", []))), "steps": 1,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}})


if __name__ == "__main__":
    main()
