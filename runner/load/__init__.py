"""Agent file -> `AgentSpec`, with every problem located (`file:line:col: key.path: message`).

```
source.py     YAML with positions, ${ENV} interpolation
loader.py     load_spec: includes, subagent refs, templates, openapi documents, SKILL.md folders
problems.py   pydantic errors -> located problems, did-you-mean
templates.py  the prompt templates ({{ vars.x }})
openapi.py    the operations of an OpenAPI document
skills.py     SKILL.md front matter
```

No LangChain import here (`tests/test_startup_imports.py`).
"""
