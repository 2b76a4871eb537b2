"""Offline runs: cassettes of recorded model replies (`cassette.py`, the format's models are
`runner.spec.cassette`), the chat model that plays them (`model.py`) and the recorder that
writes them (`recorder.py`)."""
