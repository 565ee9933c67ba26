"""The host's process machinery: the engine that runs jobs in sandboxed children of a zygote, the
zygote itself, the sandbox, the cache, the worker environment and the torch-version check."""
