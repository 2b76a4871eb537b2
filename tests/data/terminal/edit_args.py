"""An $EDITOR for the tests: rewrites the arguments file it is given (hello -> goodbye)."""

import sys
from pathlib import Path

path = Path(sys.argv[1])
path.write_text(path.read_text(encoding="utf-8").replace("hello", "goodbye"), encoding="utf-8")
