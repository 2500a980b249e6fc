"""The text of an MCP tool result's content blocks, for tests that read what an agent's client reads."""

from __future__ import annotations

from typing import Any

from mcp.types import TextContent


def text_of(result: Any, index: int = 0) -> str:
    """The text of block `index` of a tool result; fails the test if that block is not text."""
    block = result.content[index]
    assert isinstance(block, TextContent), f"block {index} is {type(block).__name__}, not text"
    return block.text
