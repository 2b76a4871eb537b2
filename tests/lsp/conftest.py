"""The files in data/ are opened in the editor tests, not collected (`good.test.yaml` is an
agent test file the server checks)."""

collect_ignore = ["data"]
