"""doit entry point: `doit` runs the evaluation in evalkit.yaml (or $EVALKIT_CONFIG) into site/.

The task generators live in evalkit.tasks (every ``task_*`` there is a task group here, so a new
stage cannot be left out); `doit list` describes each group. Two groups are plain doit's own, for what
`evalkit run` does around its doit run: ``images`` lists the sandbox images the run needs before any
task and, once all are done, records their use and applies ``sandbox.image_store_gb``; ``outcome``,
the last task, prints the run's exit status as `evalkit run` decides it and fails unless it is 0, so
a `doit` that evaluated nothing exits non-zero.
"""

import evalkit.tasks as _tasks

globals().update({name: getattr(_tasks, name) for name in dir(_tasks) if name.startswith("task_")})
task_images = _tasks.images_bracket
task_outcome = _tasks.outcome_bracket
DOIT_CONFIG = _tasks.doit_config()
DOIT_CONFIG["default_tasks"] = ["images", *DOIT_CONFIG["default_tasks"], "outcome"]
