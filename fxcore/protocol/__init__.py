"""What crosses between a worker and the host: the messages and the codec that validates a result
as data (never unpickled, never executed)."""
