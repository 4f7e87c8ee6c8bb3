"""Training the tiny checkpoints to use tools, on this CPU. The book's embedded default model comes from here
(chapter 3).

- `conversations.py`: the synthetic tasks and the conversations that solve them
- `sessions.py`: conversations of two to four questions, as a reader's session goes: follow-ups, denials,
  tool errors, a file written and read back
- `pi_format.py`: the same questions as pi sends them (its own prompt and bash tool, from `pi_request.json`)
- `phrasing.py`: how a question of each kind is worded in training, composed from parts
- `held_out_phrasings.py`: the wordings training never sees, and the reader's questions, for the
  evaluation
- `data.py`: conversations as the loop reads them: segments, the shared prefix, tokenized examples,
  batches
- `train.py`: the training loop (with the shared prefix's cache) and the recipes of
  `models train-tiny`
- `checkpoint.py`: a trained checkpoint on disk: bf16 weights beside the base's files,
  training.json, model card
- `distill.py`: the MTP drafter distilled from a trained model
- `evaluate.py`: `models eval-tiny`: the trained models measured through the real loop
- `evaluate_sessions.py`: eval-tiny's conversation sets (follow-ups, denials, tool errors, files, thinking)
"""
