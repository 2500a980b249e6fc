"""Fault tests (issue 8): what cronwright survives, each asserting nothing lost and nothing doubled."""
