"""Chat models from `provider:model` strings, and the `replay:` provider that plays cassettes.

Providers go through LangChain's `init_chat_model`; a provider whose package is missing is a
`ResolutionError` that says which extra to install. `replay:path/to/cassette.yaml` plays back
recorded replies with no network (`runner.replay.model.ReplayChatModel`).

Two things are changed on the models LangChain makes (`harden`), because real servers need them:
token usage is asked for in streamed replies too (`stream_usage`, which langchain-openai turns
on only for OpenAI's own URL, and agentctl always streams), unless the spec's params set it; and
an OpenAI-compatible reply whose tool call arguments are JSON but not an object (an array, a
string) becomes an invalid tool call, as it does when streamed, instead of an exception that
ends the run. What happens to invalid calls then is `runner.middleware.replies`' business.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.outputs import ChatResult

from runner.errors import ResolutionError, first_line
from runner.replay.cassette import Cassette, load_cassette
from runner.replay.model import ReplayChatModel

__all__ = [
    "EXTRAS",
    "ReplayChatModel",
    "init_model",
    "provider_of",
]

# Providers with an agentctl extra; others name their LangChain package.
EXTRAS = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama"}


def provider_of(model_id: str) -> str:
    return model_id.partition(":")[0]


def init_model(
    model_id: str,
    params: dict[str, Any] | None = None,
    *,
    agent: str,
    is_main: bool,
    cassettes: dict[Path, Cassette] | None = None,
) -> BaseChatModel:
    """The chat model for `provider:model`. `agent` names whose replies a replay model plays;
    `cassettes` shares loaded cassettes (and their cursors) between the agents of one build."""
    provider, _, name = model_id.partition(":")
    if provider == "replay":
        path = Path(name)
        shared = cassettes if cassettes is not None else {}
        cassette = shared.get(path)
        if cassette is None:
            cassette = shared[path] = load_cassette(path)
        return ReplayChatModel(cassette=cassette, agent=agent, is_main=is_main)

    from langchain.chat_models import init_chat_model

    try:
        model = init_chat_model(name, model_provider=provider, **(params or {}))
    except ImportError as exc:
        extra = EXTRAS.get(provider)
        if extra:
            fix = f"pip install 'agentctl[{extra}]'"
        else:
            found = re.search(r"pip install (\S+)", str(exc))
            fix = f"pip install {found.group(1).strip('`')}" if found else str(exc)
        raise ResolutionError(
            f"model {model_id!r} needs the {provider} integration, which is not installed: {fix}"
        ) from None
    except Exception as exc:  # a provider refusing its parameters or a missing API key
        raise ResolutionError(f"cannot create model {model_id!r}: {first_line(exc)}") from None
    return harden(model, params or {})


def harden(model: BaseChatModel, params: dict[str, Any]) -> BaseChatModel:
    """`model` asking for usage when streaming (unless `params` say otherwise) and, for the
    OpenAI-compatible classes, reading non-object tool arguments as invalid calls."""
    fields = type(model).model_fields
    if (
        "stream_usage" in fields
        and "stream_usage" not in params
        and not getattr(model, "stream_usage", None)
    ):
        model.stream_usage = True  # type: ignore[attr-defined]
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return model
    if isinstance(model, BaseChatOpenAI):
        model.__class__ = _tolerant(type(model))
    return model


_TOLERANT: dict[type, type] = {}
_MARK = "\x00"  # put before arguments that parse to something other than an object


def _tolerant(cls: type[Any]) -> type[Any]:
    """A subclass of an OpenAI-compatible chat model class (same name) whose non-streamed
    replies survive tool call arguments that are JSON but not an object.

    langchain-openai parses such arguments and then fails to build the AIMessage (a pydantic
    error ends the run), while a streamed reply puts the same call in `invalid_tool_calls`.
    The subclass retries the parse with those arguments marked unreadable, then restores them.
    """
    if cls in _TOLERANT.values():
        return cls
    if cls in _TOLERANT:
        return _TOLERANT[cls]
    from pydantic import ValidationError

    class Tolerant(cls):
        def _create_chat_result(
            self, response: Any, generation_info: dict[str, Any] | None = None
        ) -> ChatResult:
            try:
                return cast(ChatResult, super()._create_chat_result(response, generation_info))
            except ValidationError:
                marked = _mark_non_objects(response)
                if marked is None:
                    raise
            result = cast(ChatResult, super()._create_chat_result(marked, generation_info))
            for generation in result.generations:
                for call in getattr(generation.message, "invalid_tool_calls", None) or ():
                    raw = call.get("args")
                    if isinstance(raw, str) and raw.startswith(_MARK):
                        call["args"] = raw[len(_MARK) :]
                        call["error"] = "the arguments are JSON but not an object"
            return result

    Tolerant.__name__, Tolerant.__qualname__ = cls.__name__, cls.__qualname__
    Tolerant.__module__ = cls.__module__
    _TOLERANT[cls] = Tolerant
    return Tolerant


def _mark_non_objects(response: Any) -> dict[str, Any] | None:
    """The response as a dict with each tool call's arguments that parse to a non-object
    marked unreadable; None when there are none (the failure was something else)."""
    import copy
    import json

    data = copy.deepcopy(response if isinstance(response, dict) else response.model_dump())
    found = False
    for choice in data.get("choices") or ():
        for call in (choice.get("message") or {}).get("tool_calls") or ():
            function = call.get("function") or {}
            raw = function.get("arguments")
            try:
                value = json.loads(raw) if isinstance(raw, str) and raw else {}
            except ValueError:
                continue
            if not isinstance(value, dict) and isinstance(raw, str):
                function["arguments"] = _MARK + raw
                found = True
    return data if found else None


# --------------------------------------------------------------------------- failures

# Endpoint paths a provider client adds to its base URL (the longest first).
_ENDPOINTS = (
    "/v1/messages",
    "/chat/completions",
    "/completions",
    "/responses",
    "/embeddings",
    "/api/chat",
    "/api/generate",
)

_STATUS_HINTS = {
    400: "the server refused the request",
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model name and `base_url`",
    429: "rate limited, and the retries did not get through; see `retries.model` in the spec",
}


def describe_provider_error(exc: BaseException) -> str | None:
    """One line for a model provider's connection or HTTP error: the provider, the base URL it
    used (and the model asked for, when the request says), what happened and what to check.
    None for any other exception."""
    for error in _chain(exc):
        request = _request_of(error)
        if request is None:
            continue
        provider = type(error).__module__.split(".")[0].removeprefix("langchain_")
        named = not provider.startswith(("httpx", "httpcore"))
        where = f"the {provider if named else 'model'} server at {_base_url(str(request.url))}"
        model = _requested_model(request)
        if model:
            where += f" (model {model!r})"
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            hint = _STATUS_HINTS.get(status)
            return f"{where} answered HTTP {status}: {_server_message(error)}" + (
                f" ({hint})" if hint else ""
            )
        said = str(error).strip()
        cause = next(
            (str(e).strip() for e in _chain(error) if str(e).strip() not in ("", said)),
            said or type(error).__name__,
        )
        return (
            f"cannot reach {where}: {cause.splitlines()[0]}; check that it is running and the "
            "model's `base_url`"
        )
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 10:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _request_of(error: BaseException) -> Any:
    """The HTTP request an error of an HTTP client (httpx, openai, anthropic) carries."""
    try:
        request = getattr(error, "request", None)
    except RuntimeError:  # httpx raises when no request is attached
        return None
    return request if hasattr(request, "url") and hasattr(request, "method") else None


def _base_url(url: str) -> str:
    url = url.split("?", 1)[0].rstrip("/")
    for endpoint in _ENDPOINTS:
        if url.endswith(endpoint):
            return url[: -len(endpoint)]
    return url


def _requested_model(request: Any) -> str | None:
    import json

    try:
        body = json.loads(request.content or b"{}")
    except Exception:  # a streamed or non-JSON body: no model name to show
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return str(model) if model else None


def _server_message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message).strip().splitlines()[0]
    text = str(getattr(error, "message", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__
