"""Black-box tests of the real `cronwright` binary on a real SQLite file, the clock moved by faketime."""
