"""Graders: the grade stage (assertions, syntax, judge, rubric)."""
