"""Token ids to text as they come, with work per token that does not grow with the output.

Decoding the whole output at every token, and diffing, is simplest but quadratic. Here only a short window is
decoded: the tokens since the last text that came out whole (`prefix`) and the new ones (`read`). A character
split across byte tokens decodes to U+FFFD until its last byte arrives, so nothing comes out until then, and then
the character comes out once, whole. Joined, the pieces are exactly decode(all ids).
"""

from __future__ import annotations


class Detokenizer:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = 0  # start of the window decoded for context
        self.read = 0  # where the text already given out ends

    def add(self, token_id: int) -> str:
        """The new text this token completes ("" while a character is still split)."""
        self.ids.append(token_id)
        decode = self.tokenizer.decode
        before = decode(self.ids[self.prefix : self.read], skip_special_tokens=False)
        now = decode(self.ids[self.prefix :], skip_special_tokens=False)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]
