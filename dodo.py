"""doit entry point: `doit` runs the evaluation in evalkit.yaml (or $EVALKIT_CONFIG) into site/.

The task generators live in evalkit.tasks (every ``task_*`` there is a task group here, so a new
stage cannot be left out); `doit list` describes each group.
"""

import evalkit.tasks as _tasks

globals().update({name: getattr(_tasks, name) for name in dir(_tasks) if name.startswith("task_")})
DOIT_CONFIG = _tasks.doit_config()
