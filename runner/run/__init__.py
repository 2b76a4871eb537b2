"""One turn on a thread, as `RunEvent`s: the session, answers to approvals, attachments, batch
runs and telemetry.

```
session.py      Session: one built agent on a thread database; stream() one turn, run() collects
translate.py    LangGraph stream chunks -> RunEvents
options.py      RunOptions: a Session's settings as one value
answers.py      Decision, and answering pending approvals once
attachments.py  files sent with a message
batch.py        one run per line of a JSON lines file
telemetry.py    OpenTelemetry spans of a turn
```

`from runner.run import Session, Decision` is the Python API (docs/python-api.md); the thread
database's names are re-exported here too (`runner.threads` is their home).
"""

from runner.run.answers import Decision
from runner.run.options import RunOptions
from runner.run.session import RunResult, Session
from runner.threads.home import (
    Home,
    ThreadInfo,
    ThreadSettings,
    Transcript,
    default_home,
    new_thread_id,
    resume_settings,
)

__all__ = [
    "Decision",
    "Home",
    "RunOptions",
    "RunResult",
    "Session",
    "ThreadInfo",
    "ThreadSettings",
    "Transcript",
    "default_home",
    "new_thread_id",
    "resume_settings",
]
