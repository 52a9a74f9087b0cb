"""Purge and garbage collection are operator commands only: no MCP tool offers them, by name or
in what its description tells a model (README: "deliberately unreachable over MCP")."""

from __future__ import annotations

import re

from memhub.config import Settings
from memhub.runtime import Runtime
from memhub.storage.base import StorageBackend
from memhub.storage.purge import PurgeBackend
from memhub.tools.server import build_mcp


async def test_no_mcp_tool_offers_a_purge_or_a_garbage_collection():
    tools = await build_mcp(Runtime(settings=Settings(), version="test")).list_tools()
    offered = [t.name for t in tools
               if re.search(r"(\b|_)(purge|garbage|gc)(\b|_)", f"{t.name} {t.description}",
                            re.IGNORECASE)]
    assert len(tools) >= 21 and offered == []


def test_the_backend_the_tools_are_handed_cannot_purge():
    assert not issubclass(StorageBackend, PurgeBackend)
    assert not any(name.startswith("purge") for name in dir(StorageBackend))
