"""The migration kind's metrics: unchanged files, CodeBLEU against the expected file, incidents re-checked, the judge's
stability and fallback. Registered when the kind loads (its __init__ imports this module), with the public
``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

metric(name="unchanged", display="Unchanged", aggregate="rate", binary=True, higher_is_better=False, headline=True,
       kinds=("migration",),
       description="Share of answered cases whose main file is the legacy file as it was (line endings and "
                   "trailing whitespace aside): nothing migrated. The judge gives it all zeros without a call.")

metric(name="codebleu", display="CodeBLEU", aggregate="mean", headline=True, primary=30, kinds=("migration",),
       description="Per-case CodeBLEU against the expected code, averaged over cases (source tokenizer).")

for part, text in [("ngram_match", "n-gram match"), ("weighted_ngram_match", "weighted n-gram match"),
                   ("syntax_match", "syntax (AST) match"), ("dataflow_match", "dataflow match")]:
    metric(name=f"codebleu_{part}", display=f"CB {text}", aggregate="mean", kinds=("migration",),
           description=f"CodeBLEU component: {text}, per case, averaged over cases.")

metric(name="codebleu_gain", display="CodeBLEU gain", aggregate="mean", scale="any", kinds=("migration",),
       description="CodeBLEU points gained over the legacy file, both against the expected file: CodeBLEU(output) - "
                   "CodeBLEU(legacy); 0 for the legacy file unchanged, 1 - CodeBLEU(legacy) for the expected file. "
                   "Closeness of text, not proof of a migration: not a headline.")

metric(name="migrated", display="Migrated", aggregate="rate", binary=True, headline=True, primary=14,
       kinds=("migration",),
       description="Share of cases the output migrates: every mandatory incident gone, and the file complete (no "
                   "elided code), parsing, not the legacy file as it was, keeping the types, methods and fields the "
                   "legacy and expected files share, the imports the expected file renames (javax -> jakarta) and "
                   "a replacement for each annotation it replaces; for a file the target deletes, deleting it.")

metric(name="incidents_resolved", display="Incidents resolved", aggregate="mean", headline=True, primary=15,
       kinds=("migration",),
       description="Partial credit, secondary to Migrated: share of the case's mandatory analyzer incidents gone "
                   "from the output (the rule's matcher no longer fires; without one, the incident's line is gone). "
                   "Deleting the offending lines scores here; see Migrated.")

metric(name="corpus_codebleu", display="Corpus CodeBLEU", aggregate="mean", kinds=("migration",),
       description="CodeBLEU with n-gram, syntax and dataflow counts pooled over all the suite's cases before "
                   "dividing; differs from CodeBLEU, the mean of per-case scores. One number per suite, no interval.")

metric(name="judge_unstable", display="Judge unstable", aggregate="rate", binary=True, higher_is_better=False,
       kinds=("migration",), description="Share of cases where k judge samples disagree (an integer score spans 2+ points, a 0-1 score "
                                        "0.25 or more, or a true/false field such as compilability differs).")

metric(name="judge_fallback_score", display="Fallback judge score", aggregate="mean", scale="any", kinds=("migration",),
       description="The fallback judge's overall score (the rubric's) over the cases it judged, apart from the primary's.")
