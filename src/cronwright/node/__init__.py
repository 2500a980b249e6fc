"""The shell that fires: passes, the wake loop, the run_now hand-off, leases, dispatch and the runner port."""
