"""doit entry point: `doit` runs the evaluation in evalkit.yaml (or $EVALKIT_CONFIG) into site/.

The task generators live in evalkit.tasks; `doit list` describes each group.
"""

from evalkit.tasks import (doit_config, task_execute, task_generate, task_grade,  # noqa: F401
                           task_judge_batch, task_render, task_sandbox_image, task_score, task_summarize,
                           task_validate)

DOIT_CONFIG = doit_config()
