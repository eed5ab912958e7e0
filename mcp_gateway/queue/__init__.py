"""What queues and runs the jobs: the job contract, both runners, their bookkeeping.

``run`` (one try of one job and what it may queue), ``contract`` (dedup, singletons,
retries), ``coordination`` (the singleton lock and generation), ``scheduler`` (what
happened -> deduplicated jobs), ``inprocess`` (the embedded runner), ``arq_queue``
(Redis, ``kioku worker``), ``failures`` (permanent failures, for ``kioku stats``),
``health`` (Redis for ``kioku doctor``), ``context`` (what a job may use). The job bodies
sit above this, in ``jobs``, which hands the runners its registry (``jobs.tasks.JOBS``).
"""
