"""The run wing: what ``bindscale run`` does, top to bottom.

Lives here: the runner (:mod:`.runner`), the planner that groups trials into stacked jobs
(:mod:`.planner`), the dry run's printout (:mod:`.dryrun`), run options checked without torch
(:mod:`.options`), the executors (:mod:`.executors`: inline and process pool; :mod:`.ray_executor`),
one job's run in a worker (:mod:`.jobs`), the workers' fork server start-up (:mod:`.fork_server_init`)
and progress (:mod:`.progress`).

May import: every other wing (it is the highest below the three doors: ``kit``, ``api``, ``cli``).
"""
