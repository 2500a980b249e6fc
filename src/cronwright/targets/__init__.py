"""Targets: the registry of allowed target.action pairs, and the executors for python, command and http.

This package's `__init__` stays empty on purpose: `import cronwright` (in every target module and every
worker) loads `cronwright.targets.decorator`, and with it this file, so it must pull in nothing heavy.
Import the parts directly: `cronwright.targets.registry`, `cronwright.targets.runner`, ...
"""
