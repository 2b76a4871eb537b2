"""File tools on the agent's backend, and eviction of tool results too large for the context.

```
middleware.py  FilesystemMiddleware: the tools, each on the backend of its call; eviction
texts.py       what the model reads: tool descriptions, the prompt section, notes and limits
format.py      listings, numbered lines, grep output, previews, images
same_file.py   parallel writes and edits of one file in one reply, taken one at a time
```
"""

from runner.middleware.filesystem.format import (
    MAX_IMAGE_BYTES,
    execution_report,
    image_type,
    ls_line,
    sanitize_id,
)
from runner.middleware.filesystem.middleware import FilesystemMiddleware
from runner.middleware.filesystem.texts import CHARS_PER_TOKEN, filesystem_section

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_IMAGE_BYTES",
    "FilesystemMiddleware",
    "execution_report",
    "filesystem_section",
    "image_type",
    "ls_line",
    "sanitize_id",
]
