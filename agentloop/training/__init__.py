"""Training the tiny checkpoints to use tools, on this CPU: conversations.py writes the data, train.py trains,
evaluate.py measures through the real loop. The book's embedded default model comes from here (chapter 3)."""
