"""Conversations: the messages and the /data folder a reader's follow-up questions continue (the seed's
`__init__` appends the new question to the conversation so far).

A run that names a conversation starts from its messages and works in its folder; when the run ends, the
conversation holds what the run added. Beside the folder the sandbox sees as /data, a conversation has a private
one the sandbox never sees, holding the host's own copy of each medium attached: the copy every step decodes
(media.py), so nothing the code does to /data changes what the model is shown. The server keeps the KEEP most
recently used conversations: the next one pushes the oldest out and deletes its folders, and a later question in
it is answered "expired" (HTTP 410), not run in an empty conversation without a word. Left out: saving conversations across server restarts.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

from agentloop.sandbox import cleanup, data_folder
from demo_server.errors import ApiError

KEEP = 8  # conversations kept, each with its folder
# Ids of pushed-out conversations, so a late question is told "expired", not "unknown"
REMEMBER_EXPIRED = 256


@dataclass
class Conversation:
    id: str
    files: Path  # the folder run_python's sandbox sees as /data
    messages: list[dict] = field(
        default_factory=list
    )  # every turn so far, the model's and the tools' too
    own: Path | None = None  # the host's own copies of its media, outside /data (None: it has none)


class Conversations:
    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self._kept: OrderedDict[str, Conversation] = OrderedDict()  # least recently used first
        self._expired: deque[str] = deque(maxlen=REMEMBER_EXPIRED)
        self._lock = threading.Lock()

    def new(self) -> Conversation:
        conv = Conversation(uuid.uuid4().hex[:12], data_folder.create())
        conv.own = cleanup.temp_folder("agentloop-media")
        with self._lock:
            self._kept[conv.id] = conv
            while len(self._kept) > self.keep:
                _, old = self._kept.popitem(last=False)
                self._expired.append(old.id)
                remove_quietly(old)
        return conv

    def get(self, conv_id: str) -> Conversation:
        """The conversation, now the most recently used; ApiError 410 if it was pushed out, 404 if never made."""
        with self._lock:
            conv = self._kept.get(conv_id)
            if conv is not None:
                self._kept.move_to_end(conv_id)
                return conv
            if conv_id in self._expired:
                raise ApiError(
                    410,
                    f"Conversation {conv_id} has expired: the server keeps the last {self.keep} "
                    "conversations and their files. Start a new conversation.",
                    f"對話 {conv_id} 已過期：伺服器只保留最近 {self.keep} 個對話及其檔案。"
                    "請開始新的對話。",
                )
        raise ApiError(
            404,
            f"There is no conversation {conv_id!r}. Start a new conversation.",
            f"沒有對話 {conv_id!r}。請開始新的對話。",
        )

    def close(self) -> None:
        with self._lock:
            for conv in self._kept.values():
                remove_quietly(conv)
            self._kept.clear()


def remove_quietly(conv: Conversation) -> None:
    """Remove a conversation's folders; what cannot go now is left to the sweep at the next start."""
    for folder in (conv.files, conv.own):
        try:
            if folder is not None:
                cleanup.remove_tree(folder)
        except OSError:
            pass
