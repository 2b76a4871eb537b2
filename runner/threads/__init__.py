"""The thread database: LangGraph's checkpoints and store, and agentctl's own tables beside them
(the thread registry, the settings a thread started with, the lease, the answer log and the tool
journal), on SQLite or Postgres, with one checkpoint retention and the thread tools.
"""
