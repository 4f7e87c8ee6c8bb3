"""The demo server: serves the built book and runs agentloop for its panels (app.create_app, `agentloop serve`).

- `app.py`: the routes, nothing else (its docstring: how to add an endpoint)
- `backends.py`: what runs the model for every tab: transformers here, a vLLM the page starts, or
  VLLM_URL's
- `book.py`: the built book's pages, with the token, the API table and a Content-Security-Policy
- `client.py`: a small client and a server thread, for the tests and the recording script
- `conversations.py`: the conversations follow-up questions continue: their messages and /data
  folders
- `errors.py`: refusals and failures as an `error` event with {en, zh}
- `guard.py`: what keeps other web pages out: Host, Origin, token and body checks
- `loads.py`: a model load in a thread, and its events (download progress included)
- `media_preview.py`: what an attached file becomes in each family's prompt, with no model run
  (chapter 7)
- `menu.py`: the model menu, each entry's description, and the model folder's examples
- `model.py`: the one model, its locks, its run and its load; `text()` and `forward()` for stage
  endpoints
- `runs.py`: a run: SimpleHarness in a thread, its events kept for every reader
- `schemas.py`: the API's request and answer shapes and their limits (OpenAPI)
- `server.py`: `agentloop serve`: the app under uvicorn
- `stages.py`: one stage of the loop alone: render, tokenize, the next token's distribution
- `stream.py`: an event log read as Server-Sent Events by any number of readers
- `zh_hans.py`: each {en, zh} text the server sends given its zh-Hans
"""
