"""Running user code in a worker, the lowest of the worker's rooms: the worker's CPU-time
budgets (``budget_clock``), the time limit of one run of user code (``time_limit``) and the
seeded random generators that make a class's verdict the same on every run (``seeding``)."""
