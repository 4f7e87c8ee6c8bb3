"""Refusals and failures as the panel reads them: an `error` event, {type, message: {en, zh}}, as the body (sent
with the message's zh-Hans beside, demo_server/zh_hans.py)."""

from __future__ import annotations

from demo_server.zh_hans import JSONResponse


class ApiError(Exception):
    """A request the server refuses: HTTP `status`, with the reason in English and Traditional Chinese."""

    def __init__(self, status: int, en: str, zh: str, detail=None):
        super().__init__(en)
        self.status, self.en, self.zh, self.detail = status, en, zh, detail

    def response(self) -> JSONResponse:
        return error_response(self.status, self.en, self.zh, self.detail)


def error_body(en: str, zh: str, detail=None) -> dict:
    body = {"type": "error", "message": {"en": en, "zh": zh}}
    if detail is not None:
        body["detail"] = detail
    return body


def error_response(
    status: int, en: str, zh: str, detail=None, headers: dict | None = None
) -> JSONResponse:
    return JSONResponse(error_body(en, zh, detail), status_code=status, headers=headers)
