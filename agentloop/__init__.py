"""agentloop: an LLM agent loop small enough to read, quoted by the book that explains it.

Rooms: model_families/ (how each model writes turns and tool calls), model_backends/ (what runs the model),
harnesses/ (the loop), tools.py and sandbox.py (what the model may do), events.py (what every stage reports).
"""
