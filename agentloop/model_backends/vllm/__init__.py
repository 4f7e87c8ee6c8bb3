"""The model in a vLLM server: VLLMBackend, and what it takes to reach, ask and start such a server.

- `backend.py`: VLLMBackend: the same events as SimpleBackend from a vLLM server's token-level
  endpoints
- `client.py`: HTTP to the server: GET, POST, a streamed POST's events, and ServerError
- `menu.py`: what the server serves: its models, the one asked for, where its files come from
- `probe.py`: what the server can do with a model: /inference/v1/generate or not, which media
- `content_parts.py`: a reader's media file as /inference/v1/generate takes it
- `media_probes.py`: the tiny synthetic files the media probe sends
- `local.py`: a vLLM server on this machine, from its own venv (`agentloop vllm serve`)
- `docker.py`: a vLLM server in Docker (compose/compose.yaml): start, follow and stop
- `context_limit.py`: the context a server agentloop starts is given (--max-model-len)

Nothing is imported here: starting or waiting for a server (local.py, docker.py) needs only client.py, and
the backend's tokenizer is paid only by whoever opens one.
"""
