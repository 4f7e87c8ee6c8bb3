"""The server's texts for a zh-Hans reader: each {en, zh} it sends gets "zh-Hans", its zh through agentloop/zh_hans.py.

The server's errors, descriptions and notes are written in English and Traditional Chinese (about 50 places in
agentloop/ and demo_server/). A reader of the zh-Hans edition must not see Traditional, and the text must not be
written a third time by hand: the conversion the zh-Hans pages go through is done here, once, where the server
serializes what it sends, for the JSON answers (JSONResponse, every route's default) and the event streams
(demo_server/stream.py's sse). A panel shows "zh-Hans" to a zh-Hans reader, else zh (docs/assets/i18n.js's pick),
so a recording made before this field still shows Chinese.
"""

from __future__ import annotations

import functools
from typing import Any

from fastapi.responses import JSONResponse as PlainJSONResponse

from agentloop import zh_hans

KEY = "zh-Hans"


@functools.lru_cache(maxsize=4096)
def _convert(text: str) -> str:
    return zh_hans.convert(text)


def with_zh_hans(value: Any) -> Any:
    """`value` with "zh-Hans" beside the zh of every {en, zh} text in it, at any depth (the input is not changed)."""
    if isinstance(value, dict):
        out = {key: with_zh_hans(item) for key, item in value.items()}
        if (
            isinstance(value.get("en"), str)
            and isinstance(value.get("zh"), str)
            and KEY not in value
        ):
            out[KEY] = _convert(value["zh"])
        return out
    if isinstance(value, list | tuple):
        return [with_zh_hans(item) for item in value]
    return value


class JSONResponse(PlainJSONResponse):
    """Starlette's JSON answer, with each {en, zh} in the body given its zh-Hans."""

    def render(self, content: Any) -> bytes:
        return super().render(with_zh_hans(content))
