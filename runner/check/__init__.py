"""Static checks that need no model and build no agent: `agentctl validate` (`validate.py`),
the tools each agent of a spec has (`tools.py`), harness tool arguments (`tool_args.py`) and
cassettes against their spec (`cassettes.py`). No LangChain import here."""
