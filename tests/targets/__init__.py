"""Tests of targets, executors and the runner, with real subprocesses."""
