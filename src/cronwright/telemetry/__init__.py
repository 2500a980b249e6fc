"""What the node tells: JSON logs, event sinks, Prometheus metrics, change signals."""
